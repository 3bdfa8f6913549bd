/**
 * Web origins (RFC 6454 §4, serialised as in §6.2 and the Fetch standard): `scheme://host[:port]`,
 * scheme and host in lower case, an internationalised host in its ASCII (punycode) form, no port
 * when it is the scheme's default, and nothing else — no path (not even `/`), query, fragment or
 * userinfo. A browser sends its page's origin in this form in the Origin header, so a registered
 * origin kept in this form is compared with the header byte for byte.
 */

export type WebOriginReading =
  | { ok: true; origin: string; scheme: 'http' | 'https'; hostname: string }
  | { ok: false; problem: 'syntax' | 'scheme' | 'path' | 'userinfo' | 'wildcard' | 'port' };

/** Scheme, then `://`, then an authority with no path, query, fragment or backslash after it. */
const originShape = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#\\]*)$/;

/**
 * Reads `value` as a web origin and gives its serialised form, or what keeps it from being one.
 * http and https only: the origins a browser application is served from.
 */
export function readWebOrigin(value: string): WebOriginReading {
  if (value.length === 0 || value.length > 512 || /[\s\p{Cc}]/u.test(value)) return { ok: false, problem: 'syntax' };
  const shape = originShape.exec(value);
  if (!shape) return { ok: false, problem: /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\\]*[/?#\\]/.test(value) ? 'path' : 'syntax' };
  const scheme = (shape[1] ?? '').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return { ok: false, problem: 'scheme' };
  if ((shape[2] ?? '').includes('@')) return { ok: false, problem: 'userinfo' };
  if ((shape[2] ?? '').includes('*')) return { ok: false, problem: 'wildcard' };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { ok: false, problem: 'syntax' };
  }
  if (url.hostname === '') return { ok: false, problem: 'syntax' };
  if (url.port === '0') return { ok: false, problem: 'port' };
  return { ok: true, origin: url.origin, scheme, hostname: url.hostname };
}

/**
 * The Origin header of a request, when it is a serialised http(s) origin exactly as a browser sends
 * it; undefined for anything else (absent, `null`, repeated, malformed, or not in its serialised
 * form), which then gets no cross-origin answer at all.
 */
export function requestOrigin(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const reading = readWebOrigin(header);
  return reading.ok && reading.origin === header ? reading.origin : undefined;
}
