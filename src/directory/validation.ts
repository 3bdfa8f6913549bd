/**
 * Rules for what administrators register: usernames, emails, client ids, redirect URIs
 * (RFC 6749 §3.1.2: absolute, no fragment; RFC 8252 §7: loopback and private-use schemes for
 * native apps), grant types and API identifiers. Each returns the cleaned value or throws
 * AdminInputError with a sentence fit to print.
 */
import { isLoopbackHost } from '../oauth/redirect.js';
import { readWebOrigin } from '../oauth/web_origin.js';
import type { GrantTypeName } from '../store/store.js';

export class AdminInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdminInputError';
  }
}

/**
 * Characters that have no place in a stored name, email or group: control characters (C0, DEL,
 * C1: a terminal that prints them runs them, ESC [ … rewrites the screen, CR LF starts a line of
 * the sender's choosing), line and paragraph separators, and the bidirectional embeddings,
 * overrides and isolates that make text read otherwise than it is (Unicode TR #9; CVE-2021-42574).
 * Marks such as LRM, RLM or ZWNJ stay: names in right-to-left and many other scripts need them.
 */
const unprintable = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

export function hasControlCharacters(value: string): boolean {
  return unprintable.test(value);
}

export function validUsername(value: string): string {
  if (!/^[A-Za-z0-9._@-]{1,64}$/.test(value)) {
    throw new AdminInputError(`"${printableSample(value)}" is not a valid username: use 1-64 letters, digits or . _ @ -`);
  }
  return value;
}

export function validEmail(value: string | undefined): string {
  if (value === undefined || value === '') throw new AdminInputError('--email is required');
  if (value.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(value) || hasControlCharacters(value)) {
    throw new AdminInputError(`"${printableSample(value)}" is not a valid email address`);
  }
  return value;
}

export function validName(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed.length > 256) throw new AdminInputError('--name must be at most 256 characters');
  if (hasControlCharacters(trimmed))
    throw new AdminInputError('--name must not contain control characters (escape sequences, line breaks, direction overrides)');
  return trimmed === '' ? undefined : trimmed;
}

/** A refused value, shortened, as a message may quote it: its control characters as `?`. */
function printableSample(value: string): string {
  return value.slice(0, 80).replace(new RegExp(unprintable.source, 'gu'), '?');
}

export const minPasswordLength = 8;

export function validPassword(value: string): string {
  if (value.length < minPasswordLength) throw new AdminInputError(`the password must be at least ${minPasswordLength} characters`);
  if (value.length > 1024) throw new AdminInputError('the password must be at most 1024 characters');
  return value;
}

export function validClientId(value: string): string {
  if (!/^[A-Za-z0-9._~:-]{1,128}$/.test(value)) {
    throw new AdminInputError(`"${value.slice(0, 80)}" is not a valid client_id: use 1-128 letters, digits or . _ ~ : -`);
  }
  // A machine's tokens have sub = client_id, and people's subs are UUIDs: an API that sees only
  // `sub` must never be able to mistake one for the other (RFC 9068 §5).
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) {
    throw new AdminInputError(`"${value}" looks like a user id (a UUID); choose a client_id that cannot be mistaken for a person`);
  }
  return value;
}

export interface RedirectUriCheck {
  uri: string;
  warning: string | undefined;
}

export function validRedirectUri(value: string): RedirectUriCheck {
  // What is registered is compared byte for byte and sent in Location headers: printable ASCII only.
  if (value !== '' && !/^[\x21-\x7e]+$/.test(value))
    throw new AdminInputError(`redirect URI "${value.slice(0, 200)}" must be printable ASCII with no spaces (percent-encode anything else)`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AdminInputError(`"${value.slice(0, 200)}" is not an absolute URI`);
  }
  if (value.includes('#')) throw new AdminInputError(`redirect URI "${value.slice(0, 200)}" must not have a fragment`);
  if (value.length > 2048) throw new AdminInputError('a redirect URI must be at most 2048 characters');
  const scheme = url.protocol.slice(0, -1);
  if (scheme === 'https') return { uri: value, warning: undefined };
  if (scheme === 'http') {
    if (isLoopbackHost(url.hostname)) return { uri: value, warning: undefined };
    return { uri: value, warning: `redirect URI ${value} is plain http to a host that is not loopback; use https outside development` };
  }
  if (['javascript', 'data', 'file', 'vbscript', 'blob'].includes(scheme)) {
    throw new AdminInputError(`redirect URI scheme "${scheme}:" is not allowed`);
  }
  // RFC 8252 §7.1: private-use schemes must be reverse domain names, e.g. com.example.app:/callback.
  if (!scheme.includes('.'))
    throw new AdminInputError(`private-use redirect URI schemes must be a reverse domain name (e.g. com.example.app), not "${scheme}"`);
  return { uri: value, warning: undefined };
}

/** How many web origins one client may have. */
export const maxWebOrigins = 20;

/**
 * A web origin from which a client's browser code may call the server (CORS): `scheme://host[:port]`
 * (RFC 6454), returned in its serialised form (lower case, the default port dropped) so that it
 * compares exactly with a browser's Origin header. https, or plain http to a loopback host only
 * (development): an origin over plain http elsewhere could be anyone on the network's page.
 */
export function validWebOrigin(value: string): string {
  const sample = printableSample(value);
  const reading = readWebOrigin(value);
  if (!reading.ok) {
    switch (reading.problem) {
      case 'path':
        throw new AdminInputError(`web origin "${sample}" has a path, query or fragment: an origin is scheme://host[:port] only, e.g. https://app.example.com`);
      case 'userinfo':
        throw new AdminInputError(`web origin "${sample}" must not carry a user name or password`);
      case 'wildcard':
        throw new AdminInputError(`web origin "${sample}" has a wildcard: name each origin exactly`);
      case 'scheme':
        throw new AdminInputError(`web origin "${sample}" must use https (or http to a loopback host)`);
      case 'port':
        throw new AdminInputError(`web origin "${sample}" has port 0: use a port from 1 to 65535`);
      case 'syntax':
        throw new AdminInputError(`"${sample}" is not a web origin: use scheme://host[:port], e.g. https://app.example.com`);
    }
  }
  if (reading.scheme === 'http' && !isLoopbackHost(reading.hostname))
    throw new AdminInputError(`web origin "${sample}" uses plain http to a host that is not loopback: use https`);
  return reading.origin;
}

/** Web origins as given (repeatable option, lines of a form, a metadata list): each valid, distinct, in the order given. */
export function validWebOrigins(values: readonly string[]): string[] {
  const origins = [...new Set(values.map(validWebOrigin))];
  if (origins.length > maxWebOrigins) throw new AdminInputError(`a client may have at most ${maxWebOrigins} web origins`);
  return origins;
}

const grantTypeAliases: Record<string, GrantTypeName> = {
  authorization_code: 'authorization_code',
  device_code: 'device_code',
  'urn:ietf:params:oauth:grant-type:device_code': 'device_code',
  refresh_token: 'refresh_token',
  client_credentials: 'client_credentials',
};

export function validGrantTypes(values: string[] | undefined): GrantTypeName[] {
  if (!values || values.length === 0) return ['authorization_code', 'refresh_token'];
  const result: GrantTypeName[] = [];
  for (const value of values) {
    const grant = Object.hasOwn(grantTypeAliases, value) ? grantTypeAliases[value] : undefined;
    if (!grant)
      throw new AdminInputError(`unknown grant type "${value.slice(0, 80)}": use authorization_code, device_code, refresh_token or client_credentials`);
    if (!result.includes(grant)) result.push(grant);
  }
  return result;
}

export function validApiIdentifier(value: string): string {
  if (value === '' || value.length > 2048 || /\s/.test(value)) {
    throw new AdminInputError('an API identifier must be 1-2048 characters with no spaces (usually a URL such as https://api.example.com)');
  }
  return value;
}

/**
 * OIDC Back-Channel Logout 1.0 §2.2: an absolute http(s) URL without a fragment, where the server
 * POSTs logout tokens. Plain http only to a loopback host (development); query strings are kept.
 */
export function validBackchannelLogoutUri(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AdminInputError(`"${value.slice(0, 80)}" is not an absolute URL`);
  }
  if (url.hash !== '' || value.includes('#')) throw new AdminInputError('--backchannel-logout-uri must not have a fragment');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (isLoopbackHost(url.hostname) || url.hostname === '::1'))) {
    throw new AdminInputError('--backchannel-logout-uri must be https (or http to a loopback address)');
  }
  if (url.username !== '' || url.password !== '') throw new AdminInputError('--backchannel-logout-uri must not carry credentials');
  return value;
}
