/**
 * Devices named as people know them — "Chrome on macOS", "Safari on iPhone", "latchkey 0.2 on
 * Linux" — read from a User-Agent by bowser (a maintained parser, MIT) and, for our own command
 * line, from the form it sends: `latchkey/<version> (<os.type()>; <arch>)`.
 *
 * A User-Agent is whatever the sender typed, and can run to hundreds of characters. What comes out
 * is short and made of names from the parser's own lists and ours; the pages' name (deviceName)
 * may also carry a product token of plain characters ("openid-client 6.8"), cut short. The raw
 * header never does: not on a page, and not in a security notice (deviceDescription), where text
 * chosen by someone who took an account could read "this was your administrator, nothing to do".
 */
import { BROWSER_MAP, OS_MAP, parse } from 'bowser';
import { translator, type Translator } from '../i18n/translate.js';

const english = translator('en').t;

/** What a page shows when nothing is recognised (or nothing was sent). */
export const unknownDevice = 'Unknown software';

/** How much of a User-Agent is read at all: real ones fit, and the parser's regexes stay cheap. */
const readLength = 512;

/** Bowser's names where people say it shorter. */
const shorterNames: Readonly<Record<string, string>> = {
  'Microsoft Edge': 'Edge',
  'Samsung Internet for Android': 'Samsung Internet',
  'Chrome OS': 'ChromeOS',
};

const knownBrowsers: ReadonlySet<string> = new Set(Object.values(BROWSER_MAP).filter((name) => name !== 'Generic'));
const knownSystems: ReadonlySet<string> = new Set(Object.values(OS_MAP));

/** os.type() as our command line reports it → the system's everyday name. */
const cliSystems: Readonly<Record<string, string>> = {
  Linux: 'Linux',
  Darwin: 'macOS',
  Windows_NT: 'Windows',
  FreeBSD: 'FreeBSD',
  OpenBSD: 'OpenBSD',
  NetBSD: 'NetBSD',
  SunOS: 'Solaris',
  AIX: 'AIX',
};

/** `latchkey/0.2.0 (Linux; x64)`: the version's major.minor and the os.type() word. */
const cliAgent = /^latchkey\/(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})?(?:[-+][0-9A-Za-z.-]{0,40})?(?: \(([A-Za-z_]{1,16})(?:; [A-Za-z0-9_]{1,16})?\))?(?:\s|$)/;

/** A leading product token (RFC 9110 §10.1.5): `name/version`, plain characters only. */
const productToken = /^([A-Za-z][A-Za-z0-9._-]{0,31})\/v?(\d{1,6})(?:\.(\d{1,6}))?/;

interface Recognised {
  /** The browser or program, from a list (bowser's, or our command line). */
  software: string | undefined;
  /** The system it runs on, from a list. */
  system: string | undefined;
}

function nameOf(name: string): string {
  return shorterNames[name] ?? name;
}

function recognise(text: string): Recognised {
  const cli = cliAgent.exec(text);
  if (cli) {
    const system = cli[3] === undefined ? undefined : cliSystems[cli[3]];
    return { software: `latchkey ${Number(cli[1])}.${Number(cli[2])}`, system };
  }
  const parsed = parse(text);
  const browser = parsed.browser.name !== undefined && knownBrowsers.has(parsed.browser.name) ? nameOf(parsed.browser.name) : undefined;
  let system = parsed.os.name !== undefined && knownSystems.has(parsed.os.name) ? nameOf(parsed.os.name) : undefined;
  // "Safari on iPhone" says more than "on iOS".
  if (system === 'iOS' && (parsed.platform.model === 'iPhone' || parsed.platform.model === 'iPad')) system = parsed.platform.model;
  // A platform's own browser named after it ("Tizen on Tizen") says no more than the system does.
  return { software: browser === system ? undefined : browser, system };
}

function joined(software: string, system: string | undefined, t: Translator['t']): string {
  return system === undefined ? software : t('{software} on {system}', { software, system });
}

/**
 * The device as a page shows it, always short: "Firefox on Android", "latchkey 0.2 on Linux",
 * "a browser on Windows", "curl 8.5", or "Unknown software" — the joining words in the page's
 * language (`t`). Pages escape it like any text.
 */
export function deviceName(userAgent: string | undefined, t: Translator['t'] = english): string {
  const text = (userAgent ?? '').trim().slice(0, readLength);
  if (text === '') return t(unknownDevice);
  const { software, system } = recognise(text);
  if (software !== undefined) return joined(software, system, t);
  const [, product, major, minor] = productToken.exec(text) ?? [];
  // "Mozilla/5.0" opens nearly every browser's User-Agent and names none of them.
  if (product !== undefined && product.toLowerCase() !== 'mozilla') {
    return joined(`${product} ${Number(major)}${minor === undefined ? '' : `.${Number(minor)}`}`, system, t);
  }
  return system === undefined ? t(unknownDevice) : t('a browser on {system}', { system });
}

/**
 * The device in words of our own lists only, for a security notice: "Firefox on Linux", "a
 * browser on Windows", "latchkey 0.2 on macOS"; undefined when nothing is recognised.
 */
export function deviceDescription(userAgent: string | undefined): string | undefined {
  const text = (userAgent ?? '').trim().slice(0, readLength);
  if (text === '') return undefined;
  const { software, system } = recognise(text);
  if (software !== undefined) return joined(software, system, english);
  return system === undefined ? undefined : english('a browser on {system}', { system });
}
