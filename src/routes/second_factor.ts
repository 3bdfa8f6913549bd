/**
 * The second step of a sign-in: a TOTP code, a recovery code, or a passkey, after a
 * password or an upstream sign-in — or later, to raise a session to two factors when a client or
 * LATCHKEY_MFA asks (a step-up). And the sign-in with a passkey alone, without a username: a
 * passkey registered with user verification is two factors by itself.
 *
 * Wrong codes count toward the same back-off as wrong passwords (http/signin_attempt.ts); a TOTP
 * code is spent once used (a replay in the same 30 s is refused), a recovery code for good.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { OAuthError, tooManyRequests } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { allowFormActionTo, allowOwnScripts } from '../http/security_headers.js';
import { formActionSource } from '../oauth/redirect.js';
import { currentSession } from '../http/session.js';
import { startSignInAttempt } from '../http/signin_attempt.js';
import { hasFirstFactor, isMultiFactor, withMethods } from '../mfa/amr.js';
import { clearPendingSignIn, readPendingSignIn } from '../mfa/pending_sign_in.js';
import { hasSecondFactor, secondFactorsOf } from '../mfa/policy.js';
import { normalizeRecoveryCode, recoveryCodeDigest } from '../mfa/recovery_codes.js';
import { finishSignIn } from '../mfa/sign_in_steps.js';
import { normalizeTotpCode, totpStepOf } from '../mfa/totp.js';
import { totpSecretContext } from '../mfa/totp_secret.js';
import { authenticationOptions, parseAuthenticationResponse, relyingParty, userHandle, verifyAuthentication } from '../mfa/webauthn.js';
import { saveChallenge, takeChallenge } from '../mfa/webauthn_challenge.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import type { AuthMethod, SessionRecord, UserRecord } from '../store/store.js';
import { maxReturnToLength, openSealedInteraction, sealedInteractionOf } from '../http/sealed_interaction.js';

const pageQuery = z.object({ return_to: z.string().max(maxReturnToLength).optional() });
const codeForm = z.object({
  otp: z.string().max(64).default(''),
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(maxReturnToLength).optional(),
});
const passkeyForm = z.object({
  credential: z.string().max(65_536).default(''),
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(maxReturnToLength).optional(),
});
const optionsForm = z.object({ csrf_token: z.string().max(256).optional() });

/** Whose second step this is, and what they proved so far. */
interface SecondStep {
  user: UserRecord;
  amr: AuthMethod[];
  /** An upstream's auth_time from the first step. */
  signedInAt: number | undefined;
  /** A sign-in under way (no session yet), or a session being raised to two factors. */
  kind: 'pending' | 'step_up';
  /** The session being raised: the step-up keeps its sign-in time, request and end (a second factor is not a fresh sign-in). */
  session?: SessionRecord;
}

type CodeCheck = { kind: 'totp' } | { kind: 'recovery_code' } | { kind: 'replayed' } | { kind: 'wrong' };

export async function secondFactorRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, clock, metrics } = services;
  const page = { config: { page: true } };

  async function secondStep(request: FastifyRequest, reply: FastifyReply): Promise<SecondStep | undefined> {
    const pending = readPendingSignIn(request, reply, services, epochSeconds(clock));
    if (pending) {
      const user = await store.findUserById(pending.userId);
      // A new password (or revoke-tokens, or disable) since the first step ends this sign-in.
      if (user && !user.disabled && (user.tokensRevokedAt ?? null) === pending.tokensRevokedAt) {
        return { user, amr: pending.amr, signedInAt: pending.signedInAt, kind: 'pending' };
      }
      clearPendingSignIn(reply, services);
      return undefined;
    }
    const signedIn = await currentSession(request, services);
    // Only a session with a first factor and no second one is raised: a second factor over a
    // multi-factor session would pass for a fresh sign-in, and a session that recorded no first
    // factor (made before amr was kept) has nothing to add it to.
    if (!signedIn || isMultiFactor(signedIn.session.amr) || !hasFirstFactor(signedIn.session.amr)) return undefined;
    return { user: signedIn.user, amr: signedIn.session.amr, signedInAt: signedIn.session.authTime, kind: 'step_up', session: signedIn.session };
  }

  const signInAgain = (returnTo: string) => `/login?return_to=${encodeURIComponent(returnTo)}`;

  async function showSecondStep(request: FastifyRequest, reply: FastifyReply, step: SecondStep, returnTo: string, error: string | undefined, status = 200) {
    const factors = await secondFactorsOf(store, step.user.id);
    const passkeys = factors.passkeys > 0 && relyingParty(config) !== undefined;
    if (passkeys) allowOwnScripts(reply);
    // The forms here end, through the authorization request, at the client: CSP form-action covers redirects.
    const interaction = openSealedInteraction(request, reply, services, sealedInteractionOf(returnTo));
    allowFormActionTo(reply, interaction && formActionSource(interaction.request.redirectUri));
    return renderPage(
      request,
      reply,
      services,
      'second_factor',
      {
        title: 'Confirm it’s you',
        csrfToken: await csrfToken(request, reply, services, 'second_factor'),
        returnTo,
        totp: factors.totp,
        recoveryCodes: factors.recoveryCodes > 0,
        passkeys,
        stepUp: step.kind === 'step_up',
        error,
      },
      status,
    );
  }

  /** The second factor is proven: the session, with what was used, and on to where it was for. */
  async function succeed(
    request: FastifyRequest,
    reply: FastifyReply,
    step: SecondStep,
    returnTo: string,
    factor: 'totp' | 'recovery_code' | 'passkey',
    added: AuthMethod[],
  ) {
    clearPendingSignIn(reply, services);
    const next = await finishSignIn(request, reply, services, step.user, {
      amr: withMethods(step.amr, added),
      returnTo,
      signedInAt: step.signedInAt,
      ...(step.session ? { keep: { interactionId: step.session.interactionId, expiresAt: step.session.expiresAt, id: step.session.id } } : {}),
    });
    if (next.kind !== 'signed_in') {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Please sign in again', message: 'Your sign-ins were ended a moment ago.', link: { href: signInAgain(returnTo), label: 'Sign in' } },
        401,
      );
    }
    metrics.secondFactorEvents.inc({ factor, event: 'success' });
    audit(request, 'second_factor.success', { userId: step.user.id, factor, stepUp: step.kind === 'step_up' });
    audit(request, 'signin.success', { userId: step.user.id, amr: next.signedIn.session.amr.join(' ') });
    return reply.redirect(returnTo, 303);
  }

  async function checkCode(user: UserRecord, typed: string): Promise<CodeCheck> {
    const totp = normalizeTotpCode(typed) === undefined ? undefined : await store.findTotp(user.id);
    if (totp) {
      const step = totpStepOf(services.secretBox.open(totpSecretContext(user.id), totp.secret), typed, clock());
      if (step === undefined) return { kind: 'wrong' };
      // Spent once used: the same code again (seen over a shoulder, or phished and relayed late) is refused.
      return (await store.useTotpStep(user.id, step)) ? { kind: 'totp' } : { kind: 'replayed' };
    }
    const recovery = normalizeRecoveryCode(typed);
    if (
      recovery !== undefined &&
      (await store.useRecoveryCode(user.id, recoveryCodeDigest(services.recoveryCodeKey, user.id, recovery), epochSeconds(clock)))
    ) {
      return { kind: 'recovery_code' };
    }
    return { kind: 'wrong' };
  }

  app.get('/login/second-factor', page, async (request, reply) => {
    const { return_to } = parseFields(pageQuery, request.query);
    const returnTo = safeReturnTo(return_to, '/activate', maxReturnToLength);
    const step = await secondStep(request, reply);
    if (!step) {
      // A session that cannot be raised (see secondStep) and is not enough: a whole sign-in again.
      const signedIn = await currentSession(request, services);
      const fresh = signedIn !== undefined && !isMultiFactor(signedIn.session.amr);
      return reply.redirect(fresh ? `/login?fresh=1&return_to=${encodeURIComponent(returnTo)}` : signInAgain(returnTo), 303);
    }
    if (!hasSecondFactor(await secondFactorsOf(store, step.user.id))) {
      // A session asked for a second factor by someone who has none: set one up first.
      if (step.kind === 'step_up') return reply.redirect(`/account/security?return_to=${encodeURIComponent(returnTo)}`, 303);
      // The factors went (an administrator's mfa-reset) between the two steps: the first stands alone.
      clearPendingSignIn(reply, services);
      const next = await finishSignIn(request, reply, services, step.user, { amr: step.amr, returnTo, signedInAt: step.signedInAt });
      return reply.redirect(next.kind === 'signed_in' ? returnTo : signInAgain(returnTo), 303);
    }
    return showSecondStep(request, reply, step, returnTo, undefined);
  });

  app.post('/login/second-factor', page, async (request, reply) => {
    const form = parseFields(codeForm, request.body);
    const returnTo = safeReturnTo(form.return_to, '/activate', maxReturnToLength);
    if (!(await csrfTokenValid(request, services, 'second_factor', form.csrf_token))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: signInAgain(returnTo), label: 'Sign in' } }, 403);
    }
    const step = await secondStep(request, reply);
    if (!step) {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'This sign-in has expired', message: 'Sign in again.', link: { href: signInAgain(returnTo), label: 'Sign in' } },
        401,
      );
    }
    if (form.otp.trim() === '') return showSecondStep(request, reply, step, returnTo, 'Enter the code from your authenticator app, or a recovery code.', 400);
    const attempt = await startSignInAttempt(request, services, step.user.username, step.user.id);
    const checked = await attempt.run(() => checkCode(step.user, form.otp));
    if (checked.kind === 'wrong' || checked.kind === 'replayed') {
      await attempt.finish(false);
      metrics.secondFactorEvents.inc({ factor: 'totp', event: 'failure' });
      audit(request, 'second_factor.failure', { userId: step.user.id, reason: checked.kind });
      return showSecondStep(
        request,
        reply,
        step,
        returnTo,
        checked.kind === 'replayed' ? 'That code was used already. Wait for the next one.' : 'That code isn’t right. Try again.',
        401,
      );
    }
    await attempt.finish(true);
    attempt.rememberBrowser(reply);
    return succeed(request, reply, step, returnTo, checked.kind, ['otp']);
  });

  // ─── A passkey as the second step ───────────────────────────────────────────────────────────

  app.post('/login/second-factor/passkey/options', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const form = parseFields(optionsForm, request.body);
    if (!(await csrfTokenValid(request, services, 'second_factor', form.csrf_token)))
      throw new OAuthError('invalid_request', 'The form has expired. Reload the page.', { status: 403 });
    const rp = relyingParty(config);
    const step = await secondStep(request, reply);
    const passkeys = step ? await store.listPasskeys(step.user.id) : [];
    if (!rp || !step || passkeys.length === 0) throw new OAuthError('invalid_request', 'There is no passkey to use here.');
    const options = await authenticationOptions(rp, passkeys);
    saveChallenge(reply, services, 'second_factor', options.challenge, step.user.id);
    return options;
  });

  app.post('/login/second-factor/passkey', page, async (request, reply) => {
    const form = parseFields(passkeyForm, request.body);
    const returnTo = safeReturnTo(form.return_to, '/activate', maxReturnToLength);
    if (!(await csrfTokenValid(request, services, 'second_factor', form.csrf_token))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: signInAgain(returnTo), label: 'Sign in' } }, 403);
    }
    const step = await secondStep(request, reply);
    const rp = relyingParty(config);
    if (!step || !rp) {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'This sign-in has expired', message: 'Sign in again.', link: { href: signInAgain(returnTo), label: 'Sign in' } },
        401,
      );
    }
    const attempt = await startSignInAttempt(request, services, step.user.username, step.user.id);
    const verified = await attempt.run(async () => {
      const challenge = takeChallenge(request, reply, services, 'second_factor', step.user.id);
      const response = parseAuthenticationResponse(form.credential);
      const passkey = response && (await store.findPasskey(response.id));
      // Only one of this person's own passkeys: another's, even valid, proves nothing about them.
      if (!challenge || !response || !passkey || passkey.userId !== step.user.id) return undefined;
      const assertion = await verifyAuthentication(rp, response, challenge, passkey, false);
      // Recorded only forward: of two assertions checked in parallel against one count, one is a clone.
      if (assertion && !(await store.recordPasskeyUse(passkey.id, assertion.newCounter, epochSeconds(clock)))) return undefined;
      return assertion;
    });
    if (!verified) {
      await attempt.finish(false);
      metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'failure' });
      audit(request, 'second_factor.failure', { userId: step.user.id, factor: 'passkey' });
      return showSecondStep(request, reply, step, returnTo, 'That passkey could not be used. Try again, or use a code.', 401);
    }
    await attempt.finish(true);
    attempt.rememberBrowser(reply);
    return succeed(request, reply, step, returnTo, 'passkey', verified.userVerified ? ['hwk', 'user'] : ['hwk']);
  });

  // ─── A passkey alone, without a username ────────────────────────────────────────────────────

  app.post('/login/passkey/options', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const form = parseFields(optionsForm, request.body);
    if (!(await csrfTokenValid(request, services, 'login', form.csrf_token)))
      throw new OAuthError('invalid_request', 'The form has expired. Reload the page.', { status: 403 });
    const rp = relyingParty(config);
    if (!rp) throw new OAuthError('invalid_request', 'Passkeys are not available on this server.');
    const options = await authenticationOptions(rp, undefined);
    saveChallenge(reply, services, 'signin', options.challenge);
    return options;
  });

  app.post('/login/passkey', page, async (request, reply) => {
    const form = parseFields(passkeyForm, request.body);
    const returnTo = safeReturnTo(form.return_to, '/activate', maxReturnToLength);
    const back = { href: signInAgain(returnTo), label: 'Back to sign-in' };
    if (!(await csrfTokenValid(request, services, 'login', form.csrf_token)))
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: back }, 403);
    const rp = relyingParty(config);
    // Failed passkey sign-ins are counted per address, as wrong passwords are (there is no account to count them on).
    const addressKey = rateLimitKey(request.ip);
    const counted = await services.rateLimits.signInAddress.attempt(addressKey);
    if (counted.limited) throw tooManyRequests(counted.retryAfter, 'Too many sign-in attempts. Wait a moment and try again.');
    const challenge = takeChallenge(request, reply, services, 'signin');
    const response = parseAuthenticationResponse(form.credential);
    const passkey = response && (await store.findPasskey(response.id));
    const user = passkey && (await store.findUserById(passkey.userId));
    // The authenticator names the account it holds the passkey for; it must be the passkey's owner.
    const handleMatches = response?.response.userHandle === undefined || (user !== undefined && response.response.userHandle === userHandle(user));
    const verified =
      rp && challenge && response && passkey && user && !user.disabled && handleMatches
        ? await verifyAuthentication(rp, response, challenge, passkey, true)
        : undefined;
    // Recorded only forward: of two assertions checked in parallel against one count, one is a clone.
    const assertion = verified && passkey && (await store.recordPasskeyUse(passkey.id, verified.newCounter, epochSeconds(clock))) ? verified : undefined;
    if (!user || !assertion) {
      metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'failure' });
      audit(request, 'signin.failure', { reason: 'passkey', ...(user ? { userId: user.id } : {}) });
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'That passkey could not be used', message: 'Try again, or sign in with your username and password.', link: back },
        401,
      );
    }
    await services.rateLimits.signInAddress.undo(addressKey);
    const next = await finishSignIn(request, reply, services, user, { amr: ['hwk', 'user'], returnTo });
    if (next.kind !== 'signed_in')
      return renderErrorPage(request, reply, services, { heading: 'Please sign in again', message: 'Your sign-ins were ended a moment ago.', link: back }, 401);
    clearPendingSignIn(reply, services);
    metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'success' });
    audit(request, 'signin.success', { userId: user.id, amr: 'hwk user' });
    return reply.redirect(returnTo, 303);
  });
}
