/**
 * "Did you mean …?" for a mistyped name in a configuration file: the known name closest to what was
 * written, by edit distance, when it is close enough to be a typo.
 */
import { editDistance } from '../edit_distance.js';

/**
 * The known name `typed` most likely meant, or undefined. A typo is at most a third of the longer
 * name (one to four edits); a name that contains the typed one, or the other way round
 * (`issuer_url` for `issuer`), also counts, since a setting is often written with a word too many.
 */
export function closestName(typed: string, known: readonly string[]): string | undefined {
  const lower = typed.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(lower, name);
    const close = distance <= Math.min(4, Math.max(1, Math.floor(Math.max(lower.length, name.length) / 3)));
    const containing = lower.length >= 3 && (name.includes(lower) || lower.includes(name));
    if ((close || containing) && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}
