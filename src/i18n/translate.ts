/**
 * Messages in the page's language. A message is its English text, with `{name}` placeholders; a
 * language's catalog gives the same message in that language (gettext style, see catalog.ts). A
 * message the catalog lacks is shown in English — never an error, never an empty string — and a
 * placeholder no parameter fills is left as written.
 *
 * In a view: `<%= it.t('Sign in') %>` (plain text, escaped by Eta), or `<%~ it.tx(…) %>` when the
 * message carries markup — a parameter `{ strong: value }` becomes <strong>value</strong>, and
 * `{ href, text }` a link. tx escapes everything itself: the message and every parameter.
 * tx leaves the message's own apostrophes as they are (Eta writes ' as &#39;), so a message with
 * a straight apostrophe, such as "You're all set", is written with tx to keep the page's HTML
 * unchanged. Our attributes are all double-quoted, so this is safe; parameters, which can come
 * from anyone, are escaped as Eta escapes them, apostrophes included.
 */
import { catalogs, type Language } from './languages.js';

export type MessageParam = string | number | { readonly strong: string | number } | { readonly href: string; readonly text: string };
export type MessageParams = Readonly<Record<string, MessageParam>>;

export interface Translator {
  readonly lang: Language;
  /** The message as plain text, for `<%= %>`. */
  readonly t: (message: string, params?: MessageParams) => string;
  /** The message as HTML, every part escaped, for `<%~ %>`. */
  readonly tx: (message: string, params?: MessageParams) => string;
}

const placeholder = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** As Eta's own escaping, so a parameter looks the same whichever way it is written. */
const escapeValue = (value: string | number): string => String(value).replace(/[&<>"']/g, (c) => escapes[c] ?? c);
const escapeText = (text: string): string => text.replace(/[&<>"]/g, (c) => escapes[c] ?? c);

function plain(param: MessageParam): string {
  if (typeof param !== 'object') return String(param);
  return 'strong' in param ? String(param.strong) : param.text;
}

function html(param: MessageParam): string {
  if (typeof param !== 'object') return escapeValue(param);
  if ('strong' in param) return `<strong>${escapeValue(param.strong)}</strong>`;
  return `<a href="${escapeValue(param.href)}">${escapeValue(param.text)}</a>`;
}

/** Replaces each placeholder with fill(its parameter), escaping the text between with text(). */
function fill(template: string, params: MessageParams | undefined, value: (param: MessageParam) => string, text: (s: string) => string): string {
  let out = '';
  let last = 0;
  for (const match of template.matchAll(placeholder)) {
    const name = match[1] ?? '';
    const param = params && Object.hasOwn(params, name) ? params[name] : undefined;
    out += text(template.slice(last, match.index));
    out += param === undefined ? text(match[0]) : value(param);
    last = match.index + match[0].length;
  }
  return out + text(template.slice(last));
}

function make(lang: Language): Translator {
  const catalog = catalogs[lang];
  const translate = (message: string): string => {
    const found = catalog && Object.hasOwn(catalog, message) ? catalog[message] : undefined;
    return typeof found === 'string' && found !== '' ? found : message;
  };
  return Object.freeze({
    lang,
    t: (message: string, params?: MessageParams) => fill(translate(message), params, plain, (s) => s),
    tx: (message: string, params?: MessageParams) => fill(translate(message), params, html, escapeText),
  });
}

const translators = new Map<Language, Translator>();

export function translator(language: Language): Translator {
  let found = translators.get(language);
  if (!found) translators.set(language, (found = make(language)));
  return found;
}
