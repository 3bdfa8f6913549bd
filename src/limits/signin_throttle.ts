/**
 * Throttling password guesses without locking the owner out (RFC 6819 §4.4.3.6; OWASP
 * Authentication Cheat Sheet). An account is never blocked as a whole, since then anyone could
 * keep its owner out with one wrong password an hour. Instead:
 * - per (account, address): a growing back-off (LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT) throttles the
 *   address that guesses, not the owner signing in from elsewhere;
 * - per address (LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS): one address spraying many accounts;
 * - a browser where the account signed in before (a device cookie) is counted on its own, per
 *   (account, browser), and is exempt from the two above, so it stays usable even behind the
 *   attacker's address;
 * - per account, from everywhere (LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL): past the limit,
 *   attempts from unknown browsers go through a slow lane, one at a time per account, each after a
 *   pause — so thousands of addresses guessing in parallel get one guess per pause, not thousands,
 *   while the owner still gets in (after a wait) instead of being refused.
 * Every attempt is counted before the password is checked, in one atomic step with the decision.
 * Accounts are keyed by a keyed digest of the typed name, prepared as a directory prepares it
 * (oauth/typed_username.ts): people type passwords into that field, and the counters must not keep
 * what they typed. Once a directory has said which entry a name means, the attempt counts against
 * that entry as well (throttleResolvedAccount), so no spelling of its name has a back-off of its own.
 */
import type { RateLimiters } from './rate_limiters.js';
import type { RateLimitState } from './rate_limit.js';

/** The pause for attempts on an account under a distributed attack (from browsers it never used). */
export const slowDownMs = 3000;

export interface SignInAttempt {
  /** A keyed digest of the account: the prepared typed username (an unknown name is throttled like a real one), or the entry it resolved to. */
  account: string;
  /** The address, as rate limits key it (rateLimitKey). */
  addressKey: string;
  /** The id of this browser's device cookie, when the account signed in here before. */
  knownDevice: string | undefined;
}

export type ThrottleDecision =
  | { kind: 'refused'; state: RateLimitState }
  | {
      kind: 'go';
      /** Wait this long before answering (the account is under attack and the browser is unknown). */
      pauseMs: number;
      /** Reports the outcome: a success takes the up-front counts back, a failure adds to the account's total. */
      finish(success: boolean): Promise<void>;
      /** The attempt was not made after all (the slow lane was full): its up-front counts are taken back. */
      cancel(): Promise<void>;
    };

export function throttleSignIn(limits: RateLimiters, attempt: SignInAttempt): Promise<ThrottleDecision> {
  return throttle(limits, attempt, true);
}

/**
 * The same attempt counted against the account the typed name turned out to mean — the directory
 * entry it resolved to — with the same per-(account, address) back-off and the same total, so that
 * every name the directory takes for that entry (another spelling, another attribute the filter
 * matches) shares one. The address was counted with the typed name already: not twice.
 */
export function throttleResolvedAccount(limits: RateLimiters, attempt: SignInAttempt): Promise<ThrottleDecision> {
  return throttle(limits, attempt, false);
}

async function throttle(limits: RateLimiters, attempt: SignInAttempt, countAddress: boolean): Promise<ThrottleDecision> {
  const known = attempt.knownDevice !== undefined;
  const byAddress = !known && countAddress;
  const pairKey = known ? `${attempt.account}|device:${attempt.knownDevice}` : `${attempt.account}|${attempt.addressKey}`;
  const pair = await limits.signInAccount.attempt(pairKey);
  if (pair.limited) return { kind: 'refused', state: pair };
  if (byAddress) {
    const address = await limits.signInAddress.attempt(attempt.addressKey);
    if (address.limited) {
      // Neither refused attempt stays counted.
      await limits.signInAccount.undo(pairKey);
      return { kind: 'refused', state: address };
    }
  }
  const underAttack = !known && (await limits.signInAccountTotal.check(attempt.account)).limited;
  return {
    kind: 'go',
    pauseMs: underAttack ? slowDownMs : 0,
    async finish(success) {
      if (success) {
        await limits.signInAccount.reset(pairKey);
        if (byAddress) await limits.signInAddress.undo(attempt.addressKey);
      } else if (!known) {
        await limits.signInAccountTotal.hit(attempt.account);
      }
    },
    async cancel() {
      await limits.signInAccount.undo(pairKey);
      if (byAddress) await limits.signInAddress.undo(attempt.addressKey);
    },
  };
}

/** Answer of SlowLane.run when too many attempts already wait for the account. */
export const laneFull = Symbol('laneFull');

/**
 * One attempt at a time per account, in arrival order, with a bound on how many may wait (each
 * waiting attempt holds a connection). In this process: several instances each have their own.
 */
export class SlowLane {
  private readonly lanes = new Map<string, { tail: Promise<unknown>; waiting: number }>();

  constructor(private readonly maxWaiting = 16) {}

  async run<T>(key: string, work: () => Promise<T>): Promise<T | typeof laneFull> {
    const lane = this.lanes.get(key) ?? { tail: Promise.resolve(), waiting: 0 };
    if (lane.waiting >= this.maxWaiting) return laneFull;
    lane.waiting++;
    this.lanes.set(key, lane);
    const turn = lane.tail.then(work, work);
    lane.tail = turn.catch(() => undefined);
    try {
      return await turn;
    } finally {
      lane.waiting--;
      if (lane.waiting === 0) this.lanes.delete(key);
    }
  }
}
