/**
 * One throttled attempt at proving who someone is — a password, or the second factor after it
 * (wrong codes count toward the same back-off as wrong passwords). The attempt is counted before
 * the work (the password hash, a TOTP check), so parallel guesses cannot all slip past the check;
 * a success takes its count back. Under a distributed attack on an account, attempts go one at a
 * time through the slow lane (limits/signin_throttle.ts); a browser that signed in to the account
 * before is counted alone (http/device_cookie.ts). The name is prepared as a directory prepares it
 * (oauth/typed_username.ts) before it is keyed, and once a directory has resolved it to an entry,
 * the attempt counts against that entry too: no spelling of a name escapes its back-off.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hmacSha256 } from '../crypto/secrets.js';
import { tooManyRequests } from '../errors.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { laneFull, slowDownMs, throttleResolvedAccount, throttleSignIn, type ThrottleDecision } from '../limits/signin_throttle.js';
import { preparedUsername } from '../oauth/typed_username.js';
import type { Services } from '../services.js';
import { audit } from '../audit/audit_events.js';
import { knownFor, readDeviceCookie, rememberDevice } from './device_cookie.js';

export type GuardedCheck = <T>(check: () => Promise<T>) => Promise<T>;

export interface SignInAttempt {
  /** What the audit log may say about the account: a keyed digest, never the typed name. */
  who: { usernameDigest: string };
  /** Runs the check once the attempt may go ahead (after a pause under attack); throws 429 when it may not. */
  run: GuardedCheck;
  /**
   * Counts this attempt against one more account, once it is known which one the typed name means
   * (the directory entry a search resolved it to, by its stable id), under the same back-off as
   * the name. Throws 429, taking back what the attempt counted, when that account is backing off;
   * answers how to run the password check against it (paused, one at a time, when that account is
   * under a distributed attack).
   */
  alsoCountAgainst(account: string): Promise<GuardedCheck>;
  /** Counts the attempt as a failure, or takes it back as a success. */
  finish(success: boolean): Promise<void>;
  /** After a whole successful sign-in: this browser is known for the account from now on. */
  rememberBrowser(reply: FastifyReply): void;
}

/**
 * Throws 429 when the account (from this address or browser) or the address is backing off — or,
 * for a second factor (`secondFactorOf`: the person's id), when that person's second factors have
 * failed too often from browsers they never signed in on: a 6-digit code is guessable, and the
 * password back-off alone is cleared by each right password.
 */
export async function startSignInAttempt(request: FastifyRequest, services: Services, username: string, secondFactorOf?: string): Promise<SignInAttempt> {
  const accountKey = preparedUsername(username);
  const digestOf = (account: string) => hmacSha256(services.csrfSecret, account).slice(0, 22);
  const accountDigest = digestOf(`username:${accountKey}`);
  const who = { usernameDigest: accountDigest.slice(0, 16) };
  const device = readDeviceCookie(request, services);
  const knownDevice = knownFor(device, services, accountKey) ? device?.id : undefined;
  const addressKey = rateLimitKey(request.ip);
  const throttle = await throttleSignIn(services.rateLimits, { account: accountDigest, addressKey, knownDevice });
  if (throttle.kind === 'refused') {
    audit(request, 'signin.rate_limited', { ...who, knownDevice: knownDevice !== undefined });
    throw tooManyRequests(throttle.state.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
  }
  /** Every account this attempt counts against: the typed name's, then those it resolved to. */
  const counted: Array<Extract<ThrottleDecision, { kind: 'go' }>> = [throttle];
  // The owner's own browsers are exempt, so a guesser holding the password cannot lock them out.
  const factorKey = secondFactorOf !== undefined && knownDevice === undefined ? secondFactorOf : undefined;
  /** The attempt is not made after all: nothing it counted up front stays counted. */
  const cancel = async () => {
    for (const decision of counted) await decision.cancel();
    if (factorKey !== undefined) await services.rateLimits.secondFactor.undo(factorKey);
  };
  if (factorKey !== undefined) {
    const factor = await services.rateLimits.secondFactor.attempt(factorKey);
    if (factor.limited) {
      await throttle.cancel();
      audit(request, 'signin.rate_limited', { ...who, knownDevice: false, reason: 'second_factor' });
      throw tooManyRequests(factor.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
    }
  }
  /** Under a distributed attack on `laneKey`: one attempt at a time for it, each after a pause. */
  const guarded =
    (laneKey: string, pauseMs: number): GuardedCheck =>
    async (check) => {
      if (pauseMs === 0) return check();
      audit(request, 'signin.slowed', { ...who, pauseMs });
      const outcome = await services.signInSlowLane.run(laneKey, async () => {
        await services.sleep(pauseMs);
        return check();
      });
      if (outcome === laneFull) {
        await cancel();
        audit(request, 'signin.rate_limited', { ...who, knownDevice: false, reason: 'slow_lane_full' });
        throw tooManyRequests(slowDownMs / 1000, 'Too many sign-in attempts. Wait a moment and try again.');
      }
      return outcome;
    };
  return {
    who,
    run: guarded(accountDigest, throttle.pauseMs),
    async alsoCountAgainst(account) {
      const digest = digestOf(`resolved:${account}`);
      const decision = await throttleResolvedAccount(services.rateLimits, { account: digest, addressKey, knownDevice });
      if (decision.kind === 'refused') {
        await cancel();
        audit(request, 'signin.rate_limited', { ...who, knownDevice: knownDevice !== undefined, reason: 'resolved_account' });
        throw tooManyRequests(decision.state.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
      }
      counted.push(decision);
      return guarded(digest, decision.pauseMs);
    },
    async finish(success) {
      for (const decision of counted) await decision.finish(success);
      if (success && factorKey !== undefined) await services.rateLimits.secondFactor.reset(factorKey);
    },
    rememberBrowser: (reply) => rememberDevice(reply, services, device, accountKey),
  };
}
