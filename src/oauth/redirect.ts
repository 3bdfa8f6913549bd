/**
 * Redirect URI rules. A requested redirect_uri must equal a registered one exactly (RFC 9700
 * §4.1.3), except that for loopback registrations any port is accepted (RFC 8252 §7.3), because
 * a native app listens on whatever port is free. Responses are appended to the query (RFC 6749
 * §4.1.2) together with `iss` (RFC 9207).
 */

const loopbackHosts = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The loopback hosts a native app's redirect may name (RFC 8252 §7.3). */
export function isLoopbackHost(hostname: string): boolean {
  return loopbackHosts.has(hostname);
}

function parse(uri: string): URL | undefined {
  try {
    return new URL(uri);
  } catch {
    return undefined;
  }
}

export function isLoopbackRedirect(uri: string): boolean {
  const url = parse(uri);
  return url !== undefined && url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

const loopbackPattern = /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:\d{1,5})?(?=[/?]|$)/;

/** A loopback URI with its port taken out of the raw text (nothing else is normalised). */
function withoutLoopbackPort(uri: string): string | undefined {
  const match = loopbackPattern.exec(uri);
  if (!match) return undefined;
  const port = match[2];
  if (port !== undefined && (Number(port.slice(1)) < 1 || Number(port.slice(1)) > 65535)) return undefined;
  return `http://${match[1]}${uri.slice(match[0].length)}`;
}

/** URIs are printable ASCII without spaces (RFC 3986); anything else is refused, never cleaned up. */
export function isCleanUri(uri: string): boolean {
  return /^[\x21-\x7e]+$/.test(uri) && !uri.includes('#');
}

/**
 * Whether `requested` is allowed by the registered redirect URIs: the same string byte for byte,
 * except that for loopback registrations the port may differ. No parsing or normalisation is
 * applied, because what is compared must be exactly what the browser is sent to.
 */
export function redirectUriAllowed(requested: string, registered: readonly string[]): boolean {
  if (!isCleanUri(requested)) return false;
  if (registered.includes(requested)) return true;
  const asked = withoutLoopbackPort(requested);
  if (asked === undefined) return false;
  return registered.some((candidate) => withoutLoopbackPort(candidate) === asked);
}

/** A private-use URI scheme (RFC 8252 §7.1), such as com.example.app:/callback. */
export function isPrivateUseRedirect(uri: string): boolean {
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]*:/i.test(uri) && !/^https?:/i.test(uri);
}

/**
 * The redirect_uri with response parameters added to its query. The registered URI's own query is
 * kept byte for byte (RFC 6749 §3.1.2: it MUST be retained); ours are appended after it.
 */
export function withResponseParams(redirectUri: string, params: Record<string, string | undefined>): string {
  const added = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  if (added === '') return redirectUri;
  const separator = !redirectUri.includes('?') ? '?' : redirectUri.endsWith('?') || redirectUri.endsWith('&') ? '' : '&';
  return `${redirectUri}${separator}${added}`;
}

/** The origin a browser form may post towards when its answer redirects to `redirectUri` (CSP form-action). */
export function formActionSource(redirectUri: string): string | undefined {
  const url = parse(redirectUri);
  if (!url) return undefined;
  // CSP source expressions cannot name a bracketed IPv6 host; the scheme alone is the narrowest
  // source browsers accept for http://[::1]:port (w3c/webappsec-csp#224).
  if (url.hostname.startsWith('[')) return url.protocol;
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin;
  return url.protocol; // a private-use scheme such as com.example.app:
}
