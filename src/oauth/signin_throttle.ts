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
 * - per account, from everywhere (LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT_TOTAL): past the limit, each
 *   further attempt from an unknown browser is answered only after a pause — slowed, never refused.
 * Every attempt is counted before the password is checked, in one atomic step with the decision.
 */
import type { RateLimiters } from '../services.js';
import type { RateLimitState } from './rate_limit.js';

/** The pause for attempts on an account under a distributed attack (from browsers it never used). */
export const slowDownMs = 3000;

export interface SignInAttempt {
  /** The typed username, lower-cased (an unknown name is throttled like a real one). */
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
    };

export async function throttleSignIn(limits: RateLimiters, attempt: SignInAttempt): Promise<ThrottleDecision> {
  const known = attempt.knownDevice !== undefined;
  const pairKey = known ? `${attempt.account}|device:${attempt.knownDevice}` : `${attempt.account}|${attempt.addressKey}`;
  const pair = await limits.signInAccount.attempt(pairKey);
  if (pair.limited) return { kind: 'refused', state: pair };
  if (!known) {
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
        if (!known) await limits.signInAddress.undo(attempt.addressKey);
      } else if (!known) {
        await limits.signInAccountTotal.hit(attempt.account);
      }
    },
  };
}
