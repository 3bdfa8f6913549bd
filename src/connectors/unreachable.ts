/**
 * Whether an upstream request failed for want of an answer — a timeout, a name that does not
 * resolve, a refused, reset or unroutable connection — rather than with a wrong one. The first is
 * "could not be reached" (502, try again later); the second "cannot be trusted" (400).
 */
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ETIMEDOUT',
  'OAUTH_TIMEOUT',
  'OAUTH_ABORT',
]);

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

export function isUnreachable(err: unknown): boolean {
  // openid-client and undici wrap the network error (`cause`), sometimes twice.
  for (let e = err as ErrorLike | undefined, depth = 0; e && typeof e === 'object' && depth < 4; e = e.cause as ErrorLike | undefined, depth++) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || e.name === 'ConnectTimeoutError') return true;
    if (typeof e.code === 'string' && (networkCodes.has(e.code) || e.code.startsWith('UND_ERR_'))) return true;
    // fetch() reports every network failure as a TypeError "fetch failed" with the reason as its cause.
    if (e.name === 'TypeError' && e.message === 'fetch failed') return true;
  }
  return false;
}
