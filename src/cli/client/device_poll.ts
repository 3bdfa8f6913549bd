/**
 * Polling the token endpoint for a device code (RFC 8628 §3.4, §3.5), as a well-behaved client:
 * never faster than `interval` plus a small margin, 5 s more on every slow_down (never giving up
 * on it), Retry-After honoured on 429/503, and a clear end on access_denied or expired_token.
 * Written here rather than taken from openid-client, whose poller offers neither the margin nor
 * Retry-After nor a progress hook for the spinner.
 */
import { systemClock } from '../../clock.js';
import { fetchAsLatchkey } from './user_agent.js';

export type PollOutcome =
  { kind: 'tokens'; body: Record<string, unknown> } | { kind: 'denied' } | { kind: 'expired' } | { kind: 'aborted' } | { kind: 'failed'; message: string };

export interface PollOptions {
  tokenEndpoint: string;
  clientId: string;
  deviceCode: string;
  intervalSeconds: number;
  expiresInSeconds: number;
  signal: AbortSignal;
  /** Called before each wait with the seconds left until the code expires. */
  onWait?: (secondsLeft: number) => void;
  /**
   * With `latchkey login --dpop`: makes the DPoP proof of each poll (RFC 9449), with the server's
   * latest nonce. A use_dpop_nonce answer is retried at once with the nonce it carried (it is
   * refused before the poll counts, so it earns no slow_down).
   */
  dpopProof?: (nonce: string | undefined) => Promise<string>;
  /** Injected by tests; the real clock and timers otherwise. */
  clock?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Retry-After in seconds or as an HTTP date (RFC 9110 §10.2.3), as milliseconds from now. */
export function retryAfterMs(value: string | null, nowMs: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** A poll that gets no answer in this long is given up and retried at the interval. */
const requestTimeoutMs = 30_000;

/** Polls arriving a little late are harmless; early ones earn slow_down. */
export const safetyMarginMs = 250;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export async function pollForTokens(options: PollOptions): Promise<PollOutcome> {
  const clock = options.clock ?? systemClock;
  const wait = options.sleep ?? sleep;
  const nowMs = () => clock() * 1000;
  const deadline = nowMs() + options.expiresInSeconds * 1000;
  let intervalMs = Math.max(1, options.intervalSeconds) * 1000;
  let waitMs = intervalMs;
  let nonce: string | undefined;
  let nonceRetried = false;
  for (;;) {
    if (waitMs > 0) {
      options.onWait?.(Math.max(0, Math.round((deadline - nowMs()) / 1000)));
      await wait(waitMs + safetyMarginMs, options.signal);
    }
    if (options.signal.aborted) return { kind: 'aborted' };
    if (nowMs() >= deadline + intervalMs) return { kind: 'expired' };
    let response: Response;
    try {
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
      if (options.dpopProof) headers.dpop = await options.dpopProof(nonce);
      response = await fetchAsLatchkey(options.tokenEndpoint, {
        method: 'POST',
        headers,
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: options.deviceCode, client_id: options.clientId }),
        signal: AbortSignal.any([options.signal, AbortSignal.timeout(requestTimeoutMs)]),
      });
    } catch {
      // Aborted during the request (the check above ran before it).
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
      if (options.signal.aborted) return { kind: 'aborted' };
      waitMs = intervalMs; // a network blip: try again at the interval
      continue;
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok) return { kind: 'tokens', body };
    nonce = response.headers.get('dpop-nonce') ?? nonce;
    if (body.error === 'use_dpop_nonce' && options.dpopProof && !nonceRetried) {
      nonceRetried = true;
      waitMs = 0;
      continue;
    }
    nonceRetried = false;
    // Retry-After is honoured whatever the answer, but never below the interval.
    const retryAfter = retryAfterMs(response.headers.get('retry-after'), nowMs());
    switch (body.error) {
      case 'authorization_pending':
        waitMs = Math.max(intervalMs, retryAfter ?? 0);
        break;
      case 'slow_down':
        intervalMs += 5000;
        waitMs = Math.max(intervalMs, retryAfter ?? 0);
        break;
      case 'access_denied':
        return { kind: 'denied' };
      case 'expired_token':
        return { kind: 'expired' };
      default:
        if (response.status === 429 || response.status === 503) {
          waitMs = Math.max(intervalMs, retryAfter ?? intervalMs);
          break;
        }
        return {
          kind: 'failed',
          message: `${typeof body.error === 'string' ? body.error : response.status}${typeof body.error_description === 'string' && body.error_description !== '' ? `: ${body.error_description}` : ''}`,
        };
    }
  }
}
