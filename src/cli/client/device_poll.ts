/**
 * Polling the token endpoint for a device code (RFC 8628 §3.4, §3.5), as a well-behaved client:
 * never faster than `interval` plus a small margin, 5 s more on every slow_down (never giving up
 * on it), Retry-After honoured on 429/503, and a clear end on access_denied or expired_token.
 * Written here rather than taken from openid-client, whose poller offers neither the margin nor
 * Retry-After nor a progress hook for the spinner.
 */
import { systemClock } from '../../clock.js';

export type PollOutcome =
  | { kind: 'tokens'; body: Record<string, unknown> }
  | { kind: 'denied' }
  | { kind: 'expired' }
  | { kind: 'aborted' }
  | { kind: 'failed'; message: string };

export interface PollOptions {
  tokenEndpoint: string;
  clientId: string;
  deviceCode: string;
  intervalSeconds: number;
  expiresInSeconds: number;
  signal: AbortSignal;
  /** Called before each wait with the seconds left until the code expires. */
  onWait?: (secondsLeft: number) => void;
  /** Injected by tests; the real clock and timers otherwise. */
  clock?: () => number;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

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
  for (;;) {
    options.onWait?.(Math.max(0, Math.round((deadline - nowMs()) / 1000)));
    await wait(waitMs + safetyMarginMs, options.signal);
    if (options.signal.aborted) return { kind: 'aborted' };
    if (nowMs() >= deadline + intervalMs) return { kind: 'expired' };
    let response: Response;
    try {
      response = await fetch(options.tokenEndpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: options.deviceCode, client_id: options.clientId }),
        signal: options.signal,
      });
    } catch {
      if (options.signal.aborted) return { kind: 'aborted' };
      waitMs = intervalMs; // a network blip: try again at the interval
      continue;
    }
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok) return { kind: 'tokens', body };
    const retryAfter = Number(response.headers.get('retry-after'));
    switch (body.error) {
      case 'authorization_pending':
        waitMs = intervalMs;
        break;
      case 'slow_down':
        intervalMs += 5000;
        waitMs = intervalMs;
        break;
      case 'access_denied':
        return { kind: 'denied' };
      case 'expired_token':
        return { kind: 'expired' };
      default:
        if (response.status === 429 || response.status === 503) {
          waitMs = Math.max(intervalMs, Number.isFinite(retryAfter) ? retryAfter * 1000 : intervalMs);
          break;
        }
        return { kind: 'failed', message: `${String(body.error ?? response.status)}${body.error_description ? `: ${String(body.error_description)}` : ''}` };
    }
  }
}
