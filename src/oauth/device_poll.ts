/**
 * The answer to one poll of the token endpoint with a device code (RFC 8628 §3.5), as a pure
 * function of the grant (as it was before this poll) and the time. Order matters: a spent code is
 * invalid_grant, then expiry, then the person's decision; only a still-pending grant is held to
 * the interval, so an approved grant is handed out even to an impatient poll.
 */
import type { DeviceGrantRecord } from '../store/store.js';

/**
 * Polls up to a second early are clock jitter, not impatience; for very short intervals the
 * allowance shrinks to a fifth of the interval so that slow_down still means something.
 */
export function pollJitterAllowanceMs(intervalSeconds: number): number {
  return Math.min(1000, intervalSeconds * 200);
}
/** RFC 8628 §3.5: every slow_down adds 5 seconds to the interval. */
export const slowDownIncrement = 5;

export type PollDecision =
  { kind: 'spent' } | { kind: 'expired' } | { kind: 'denied' } | { kind: 'approved' } | { kind: 'slow_down'; newInterval: number } | { kind: 'pending' };

export function decidePoll(grant: DeviceGrantRecord, nowMs: number): PollDecision {
  if (grant.status === 'consumed') return { kind: 'spent' };
  if (nowMs >= grant.expiresAt * 1000) return { kind: 'expired' };
  if (grant.status === 'denied') return { kind: 'denied' };
  if (grant.status === 'approved') return { kind: 'approved' };
  if (grant.lastPolledAtMs !== undefined) {
    const sincePrevious = nowMs - grant.lastPolledAtMs;
    if (sincePrevious < grant.interval * 1000 - pollJitterAllowanceMs(grant.interval)) {
      return { kind: 'slow_down', newInterval: grant.interval + slowDownIncrement };
    }
  }
  return { kind: 'pending' };
}
