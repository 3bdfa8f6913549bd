/**
 * Which languages the pages can be shown in, and picking one from what the person or the client
 * asked for: OIDC Core §3.1.2.1 `ui_locales` (space-separated BCP 47 tags, in order of
 * preference) and the browser's Accept-Language (RFC 9110 §12.5.4). Matching follows the
 * "lookup" scheme of RFC 4647 §3.4: a tag matches itself, case-insensitively, else the tag with
 * its last subtags cut off (`fr-CA` → `fr`, `zh-Hant-TW` → `zh-Hant` → `zh`).
 */
import type { Catalog } from './catalog.js';
import { fr } from './catalogs/fr.js';

export type { Catalog } from './catalog.js';

/**
 * The registry: one line per language, keyed by its canonical BCP 47 tag (`fr`, `pt-BR`). English
 * is the source text and has no catalog.
 */
export const catalogs = {
  en: undefined,
  fr,
} as const satisfies Record<string, Catalog | undefined>;

export type Language = keyof typeof catalogs;

export const defaultLanguage: Language = 'en';

/** In canonical BCP 47 casing, for discovery's `ui_locales_supported`. */
export const supportedLanguages: readonly Language[] = Object.freeze(Object.keys(catalogs) as Language[]);

/** Bounds on what is read from a request: a header or parameter can be megabytes long. */
const maxInputLength = 1024;
const maxPreferences = 20;
const maxTagLength = 64;

/** A language tag or range as HTTP and BCP 47 spell it (no `*`): 1–8 letters, then `-` subtags. */
const tagPattern = /^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$/;

const byLowerCaseTag = new Map<string, Language>(supportedLanguages.map((language) => [language.toLowerCase(), language]));

function isLanguageTag(value: string): boolean {
  return value.length <= maxTagLength && tagPattern.test(value);
}

/** The supported language one tag asks for, if any (RFC 4647 §3.4 lookup). */
function lookUp(tag: string): Language | undefined {
  let range = tag.toLowerCase();
  for (;;) {
    const found = byLowerCaseTag.get(range);
    if (found) return found;
    let cut = range.lastIndexOf('-');
    if (cut < 0) return undefined;
    // A single-letter subtag (an extension or private-use singleton) never ends a range.
    if (cut >= 2 && range[cut - 2] === '-') cut -= 2;
    range = range.slice(0, cut);
  }
}

/** The first preference whose language is supported, or undefined when none is. */
export function matchLanguage(preferences: readonly string[]): Language | undefined {
  for (const preference of preferences.slice(0, maxPreferences)) {
    if (!isLanguageTag(preference)) continue;
    const found = lookUp(preference);
    if (found) return found;
  }
  return undefined;
}

/** The first preference whose language is supported, else English. */
export function negotiateLanguage(preferences: readonly string[]): Language {
  return matchLanguage(preferences) ?? defaultLanguage;
}

/** At most maxInputLength characters, cut at a separator so that no part is half a tag. */
function bounded(value: string, separator: RegExp): string {
  if (value.length <= maxInputLength) return value;
  const head = value.slice(0, maxInputLength + 1);
  let cut = -1;
  for (const match of head.matchAll(separator)) cut = match.index;
  return cut < 0 ? '' : head.slice(0, cut);
}

/** OIDC `ui_locales`: space-separated tags, most preferred first. Anything not a tag is skipped. */
export function parseUiLocales(value: string | undefined): string[] {
  if (!value) return [];
  return bounded(value, /\s/g).split(/\s+/).filter(isLanguageTag).slice(0, maxPreferences);
}

const weightPattern = /^q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/i;

/**
 * Accept-Language: the language ranges in order of their weight (q), equal weights in the order
 * given. q=0 means "not this one" and is left out; `*` says nothing about which language, and a
 * malformed part is skipped rather than failing the header.
 */
export function parseAcceptLanguage(header: string | undefined): string[] {
  if (!header) return [];
  const ranked: Array<{ tag: string; q: number }> = [];
  for (const part of bounded(header, /,/g).split(',').slice(0, maxPreferences)) {
    const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim());
    if (!isLanguageTag(range) || parameters.length > 1) continue;
    let q = 1;
    const [parameter] = parameters;
    if (parameter !== undefined) {
      const weight = weightPattern.exec(parameter);
      if (!weight) continue;
      q = Number(weight[1]);
    }
    if (q > 0) ranked.push({ tag: range, q });
  }
  // Array.prototype.sort is stable: equal weights keep the header's order.
  return ranked.sort((a, b) => b.q - a.q).map((entry) => entry.tag);
}
