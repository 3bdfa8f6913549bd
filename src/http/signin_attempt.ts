/**
 * One throttled attempt at proving who someone is — a password, or the second factor after it
 * (wrong codes count toward the same back-off as wrong passwords). The attempt is counted before
 * the work (scrypt, a TOTP check), so parallel guesses cannot all slip past the check; a success
 * takes its count back. Under a distributed attack on an account, attempts go one at a time
 * through the slow lane (oauth/signin_throttle.ts); a browser that signed in to the account before
 * is counted alone (http/device_cookie.ts).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hmacSha256 } from '../crypto/secrets.js';
import { tooManyRequests } from '../errors.js';
import { rateLimitKey } from '../oauth/rate_limit.js';
import { laneFull, slowDownMs, throttleSignIn } from '../oauth/signin_throttle.js';
import type { Services } from '../services.js';
import { audit } from './audit.js';
import { knownFor, readDeviceCookie, rememberDevice } from './device_cookie.js';

export interface SignInAttempt {
  /** What the audit log may say about the account: a keyed digest, never the typed name. */
  who: { usernameDigest: string };
  /** Runs the check once the attempt may go ahead (after a pause under attack); throws 429 when it may not. */
  run<T>(check: () => Promise<T>): Promise<T>;
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
  const accountKey = username.toLowerCase();
  const accountDigest = hmacSha256(services.csrfSecret, `username:${accountKey}`).slice(0, 22);
  const who = { usernameDigest: accountDigest.slice(0, 16) };
  const device = readDeviceCookie(request, services);
  const knownDevice = knownFor(device, services, accountKey) ? device?.id : undefined;
  const throttle = await throttleSignIn(services.rateLimits, { account: accountDigest, addressKey: rateLimitKey(request.ip), knownDevice });
  if (throttle.kind === 'refused') {
    audit(request, 'signin.rate_limited', { ...who, knownDevice: knownDevice !== undefined });
    throw tooManyRequests(throttle.state.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
  }
  // The owner's own browsers are exempt, so a guesser holding the password cannot lock them out.
  const factorKey = secondFactorOf !== undefined && knownDevice === undefined ? secondFactorOf : undefined;
  if (factorKey !== undefined) {
    const factor = await services.rateLimits.secondFactor.attempt(factorKey);
    if (factor.limited) {
      await throttle.cancel();
      audit(request, 'signin.rate_limited', { ...who, knownDevice: false, reason: 'second_factor' });
      throw tooManyRequests(factor.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
    }
  }
  return {
    who,
    async run(check) {
      if (throttle.pauseMs === 0) return check();
      // Under a distributed attack: one attempt at a time for this account, each after a pause.
      audit(request, 'signin.slowed', { ...who, pauseMs: throttle.pauseMs });
      const outcome = await services.signInSlowLane.run(accountDigest, async () => {
        await services.sleep(throttle.pauseMs);
        return check();
      });
      if (outcome === laneFull) {
        await throttle.cancel();
        if (factorKey !== undefined) await services.rateLimits.secondFactor.undo(factorKey);
        audit(request, 'signin.rate_limited', { ...who, knownDevice: false, reason: 'slow_lane_full' });
        throw tooManyRequests(slowDownMs / 1000, 'Too many sign-in attempts. Wait a moment and try again.');
      }
      return outcome;
    },
    async finish(success) {
      await throttle.finish(success);
      if (success && factorKey !== undefined) await services.rateLimits.secondFactor.reset(factorKey);
    },
    rememberBrowser: (reply) => rememberDevice(reply, services, device, accountKey),
  };
}
