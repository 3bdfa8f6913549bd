/**
 * "Did you mean …?" for a mistyped command: the commands (and groups) of the index closest to what
 * was typed, by edit distance, so `latchkey user list` points at `latchkey users list` and
 * `latchkey logn` at `latchkey login`.
 */
import { editDistance } from '../edit_distance.js';
import type { CommandEntry } from './command.js';

export { editDistance };

/** Close enough to be a typo: a third of the longer one, at least one and at most three edits. */
const closeEnough = (distance: number, typed: string, known: string) =>
  distance <= Math.min(3, Math.max(1, Math.floor(Math.max(typed.length, known.length) / 3)));

/**
 * The commands or groups `words` (the typed words that are not options) most likely meant, best
 * first (at most three). Each candidate is compared with as many typed words as it has.
 */
export function suggestCommands(words: readonly string[], index: readonly CommandEntry[]): string[] {
  if (words.length === 0) return [];
  const candidates = new Set<string>();
  for (const entry of index) {
    candidates.add(entry.path.join(' '));
    const [group] = entry.path;
    if (entry.path.length > 1 && group !== undefined) candidates.add(group);
  }
  const scored: { candidate: string; distance: number }[] = [];
  for (const candidate of candidates) {
    const size = candidate.split(' ').length;
    if (words.length < size) continue;
    const typed = words.slice(0, size).join(' ');
    // A group alone is offered only when its name, not a command of it, was mistyped.
    if (size === 1 && words.length > 1 && index.some((e) => e.path.length > 1 && e.path[0] === candidate)) {
      const subcommands = index.filter((e) => e.path[0] === candidate).map((e) => e.path[1]);
      if (subcommands.includes(words[1])) continue;
    }
    const distance = editDistance(typed, candidate);
    if (distance > 0 && closeEnough(distance, typed, candidate)) scored.push({ candidate, distance });
  }
  scored.sort((a, b) => a.distance - b.distance || b.candidate.split(' ').length - a.candidate.split(' ').length || a.candidate.localeCompare(b.candidate));
  const best = scored[0]?.distance;
  return scored
    .filter((s) => s.distance === best)
    .slice(0, 3)
    .map((s) => s.candidate);
}
