/**
 * /account/security: a signed-in person sets up and removes their second factors — a
 * TOTP app (QR code and the secret as text, confirmed with a code), passkeys (registered, named,
 * removed) and ten recovery codes (shown once, stored as keyed digests).
 *
 * Every change needs a sign-in made here within the last 15 minutes, and — for someone who already
 * has a factor — a session that used one: a session cookie taken from an unlocked laptop must not
 * be able to swap the factors and keep the account. The first factor of an account holding the
 * `admin` role needs a one-time enrolment link from another administrator (mfa/enrolment_link.ts):
 * a stolen password alone must not be able to bind the thief's factor to the accounts that run the
 * server. Under LATCHKEY_MFA=required — and for such an account — the last factor cannot be
 * removed. Setting up a factor for a sign-in that needs one (LATCHKEY_MFA=required, or a client's
 * acr_values) counts as that sign-in's second factor, and the person goes on from there. Every
 * change is told to the person by mail (mail/security_notice.ts), after the answer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { OAuthError } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { allowFormActionTo, allowOwnScripts } from '../http/security_headers.js';
import { formActionSource } from '../oauth/redirect.js';
import { currentSession, startSession, type SignedIn } from '../http/session.js';
import { isMultiFactor, withMethods } from '../mfa/amr.js';
import { enrolmentPath, enrolmentSecretIn, firstFactorNeedsLink, spendEnrolmentLink } from '../mfa/enrolment_link.js';
import { clearEnrolmentPermit, grantEnrolmentPermit, hasEnrolmentPermit } from '../mfa/enrolment_permit.js';
import { hasSecondFactor, secondFactorsOf, stepUpPath, type SecondFactors } from '../mfa/policy.js';
import { newRecoveryCodes, normalizeRecoveryCode, recoveryCodeDigest } from '../mfa/recovery_codes.js';
import { newTotpSecret, spacedSecret, totpStepOf, totpUri } from '../mfa/totp.js';
import { totpSecretContext } from '../mfa/totp_secret.js';
import { parseRegistrationResponse, registrationOptions, relyingParty, verifyRegistration } from '../mfa/webauthn.js';
import { saveChallenge, takeChallenge } from '../mfa/webauthn_challenge.js';
import { passkeyName } from '../mfa/passkey_name.js';
import { recentSignInSeconds } from '../account/recent_sign_in.js';
import { DuplicateError, type AuthMethod } from '../store/store.js';
import { adminRole } from '../directory/roles.js';
import { sendSecurityNoticesLater } from '../mail/security_notice_sender.js';
import { maxReturnToLength, openSealedInteraction, sealedInteractionOf } from '../http/sealed_interaction.js';

/** A TOTP set-up page stays usable this long. */
const totpSetupLifetime = 10 * 60;
/** Passkeys per person: plenty for every device they own, and a bound on what one account can store. */
export const maxPasskeys = 20;

const pageQuery = z.object({ return_to: z.string().max(maxReturnToLength).optional() });
const baseForm = {
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(maxReturnToLength).optional(),
};
const plainForm = z.object(baseForm);
const totpForm = z.object({ ...baseForm, setup: z.string().max(1024).default(''), otp: z.string().max(64).default('') });
const passkeyForm = z.object({ ...baseForm, credential: z.string().max(65_536).default(''), name: z.string().max(256).default('') });
const passkeyChange = z.object({ ...baseForm, id: z.string().max(1400).default(''), name: z.string().max(256).default('') });
const enrolQuery = z.object({ code: z.string().max(2048).optional(), return_to: z.string().max(maxReturnToLength).optional() });
const enrolForm = z.object({ ...baseForm, code: z.string().max(2048).default('') });

type Guarded = { ok: true; signedIn: SignedIn; factors: SecondFactors } | { ok: false; reply: FastifyReply };

export async function accountSecurityRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, clock, metrics } = services;
  const page = { config: { page: true } };

  const here = (returnTo: string | undefined) => (returnTo === undefined ? '/account/security' : `/account/security?return_to=${encodeURIComponent(returnTo)}`);
  const signInAgain = (returnTo: string | undefined) => `/login?fresh=1&return_to=${encodeURIComponent(here(returnTo))}`;
  const returnToOf = (value: string | undefined) => (value === undefined || value === '' ? undefined : safeReturnTo(value, '/activate', maxReturnToLength));

  /**
   * Who may change what: signed in, a valid form, second factors not turned off, a recent sign-in,
   * and a second factor used by this session if the person has one.
   */
  async function guard(request: FastifyRequest, reply: FastifyReply, csrf: string | undefined | false, returnTo: string | undefined): Promise<Guarded> {
    const signedIn = await currentSession(request, services);
    if (!signedIn) return { ok: false, reply: await reply.redirect(`/login?return_to=${encodeURIComponent(here(returnTo))}`, 303) };
    if (csrf !== false && !(await csrfTokenValid(request, services, 'account_security', csrf))) {
      return {
        ok: false,
        reply: await renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: here(returnTo), label: 'Back to security' } }, 403),
      };
    }
    if (config.mfa === 'off') {
      return {
        ok: false,
        reply: await renderErrorPage(request, reply, services, { heading: 'Second factors are off', message: 'This server does not use second factors.' }, 403),
      };
    }
    // The sign-in itself, not the session: a step-up or an enrolment does not make an old sign-in recent.
    if (epochSeconds(clock) - signedIn.session.authTime > recentSignInSeconds) {
      return {
        ok: false,
        reply: await renderErrorPage(
          request,
          reply,
          services,
          {
            heading: 'Sign in again to continue',
            message: 'Changing how you sign in needs a sign-in from the last 15 minutes.',
            link: { href: signInAgain(returnTo), label: 'Sign in again' },
          },
          401,
        ),
      };
    }
    const factors = await secondFactorsOf(store, signedIn.user.id);
    if (hasSecondFactor(factors) && !isMultiFactor(signedIn.session.amr)) return { ok: false, reply: await reply.redirect(stepUpPath(here(returnTo)), 303) };
    return { ok: true, signedIn, factors };
  }

  /** A set-up that goes on to an authorization request ends, by redirects, at its client (CSP form-action). */
  function allowFormsToEndAtClient(request: FastifyRequest, reply: FastifyReply, returnTo: string | undefined) {
    const interaction = returnTo === undefined ? undefined : openSealedInteraction(request, reply, services, sealedInteractionOf(returnTo));
    allowFormActionTo(reply, interaction && formActionSource(interaction.request.redirectUri));
  }

  /** The command an administrator runs to let this person set up their first factor. */
  const enrolCommand = (username: string) =>
    `latchkey users mfa-enroll ${/^[A-Za-z0-9._@-]+$/.test(username) ? username : `'${username.replace(/'/g, "'\\''")}'`}`;

  /**
   * Whether this person may set up a factor now: anyone with a factor already (the guard made sure
   * their session used one), anyone without the admin role, and an administrator whose browser
   * holds the permit an enrolment link left.
   */
  function mayEnroll(request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn, factors: SecondFactors): boolean {
    return !firstFactorNeedsLink(signedIn.user, factors) || hasEnrolmentPermit(request, reply, services, signedIn, epochSeconds(clock));
  }

  /** The page that turns away a first factor without an enrolment link, saying what to do instead. */
  function enrolmentRefused(request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn, returnTo: string | undefined, factor: 'totp' | 'passkey') {
    audit(request, 'second_factor.enrolment_refused', { userId: signedIn.user.id, factor, reason: 'no_enrolment_link' });
    return renderErrorPage(
      request,
      reply,
      services,
      {
        heading: 'Ask an administrator for an enrolment link',
        message: `Your account holds the admin role, so a password alone cannot add its first second factor. Ask an administrator to run \`${enrolCommand(signedIn.user.username)}\` (or to make an enrolment link on your page of the admin console), then open the link they give you while signed in here.`,
        link: { href: here(returnTo), label: 'Back to security' },
      },
      403,
    );
  }

  async function showOverview(request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn, returnTo: string | undefined, notice?: string) {
    const { user, session } = signedIn;
    const [totp, passkeys, recoveryCodes] = await Promise.all([store.findTotp(user.id), store.listPasskeys(user.id), store.countRecoveryCodes(user.id)]);
    const rp = relyingParty(config);
    if (rp) allowOwnScripts(reply);
    allowFormsToEndAtClient(request, reply, returnTo);
    const date = (t: number | undefined) => (t === undefined ? undefined : new Date(t * 1000).toISOString().slice(0, 10));
    const now = epochSeconds(clock);
    const factors = { totp: totp !== undefined, passkeys: passkeys.length, recoveryCodes };
    const linkNeeded = config.mfa !== 'off' && firstFactorNeedsLink(user, factors);
    const permitted = linkNeeded && hasEnrolmentPermit(request, reply, services, signedIn, now);
    return renderPage(request, reply, services, 'account_security', {
      title: 'Sign-in security',
      csrfToken: await csrfToken(request, reply, services, 'account_security'),
      off: config.mfa === 'off',
      required: config.mfa === 'required',
      returnTo,
      needsFactor: returnTo !== undefined && !hasSecondFactor(factors),
      // An administrator without a factor and without a permit sees how to get an enrolment link instead of the set-up buttons.
      enrolment: linkNeeded ? { permitted, command: enrolCommand(user.username), action: enrolmentPath } : undefined,
      continueTo: returnTo !== undefined && isMultiFactor(session.amr) ? returnTo : undefined,
      recent: now - session.authTime <= recentSignInSeconds,
      signInAgain: signInAgain(returnTo),
      totp: totp && { since: date(totp.createdAt) },
      passkeysAvailable: rp !== undefined,
      passkeys: passkeys.map((p) => ({ id: p.id, name: p.name, added: date(p.createdAt), lastUsed: date(p.lastUsedAt), synced: p.backedUp })),
      canAddPasskey: passkeys.length < maxPasskeys,
      recoveryCodes,
      notice,
    });
  }

  /**
   * A factor was just set up: for a person's first, ten recovery codes at once (shown once). The
   * session now has it: a sign-in that waited for a second factor goes on.
   */
  async function afterEnrollment(
    request: FastifyRequest,
    reply: FastifyReply,
    signedIn: SignedIn,
    factors: SecondFactors,
    added: AuthMethod[],
    returnTo: string | undefined,
  ) {
    const { user, session } = signedIn;
    const upgraded = await startSession(request, reply, services, user, {
      amr: withMethods(session.amr, added),
      interactionId: session.interactionId,
      signedInAt: session.authTime,
      expiresAt: session.expiresAt,
      id: session.id,
    });
    if (!upgraded)
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Please sign in again', message: 'Your sign-ins were ended a moment ago.', link: { href: signInAgain(returnTo), label: 'Sign in' } },
        401,
      );
    // The permit of an enrolment link has served: from now on the factor itself guards every change.
    clearEnrolmentPermit(reply, services);
    if (factors.recoveryCodes === 0) return showRecoveryCodes(request, reply, user.id, returnTo);
    return reply.redirect(returnTo ?? '/account/security', 303);
  }

  async function showRecoveryCodes(request: FastifyRequest, reply: FastifyReply, userId: string, returnTo: string | undefined) {
    const codes = newRecoveryCodes();
    const digests = codes.map((c) => {
      const normal = normalizeRecoveryCode(c);
      if (normal === undefined) throw new Error('a new recovery code does not read as one');
      return recoveryCodeDigest(services.recoveryCodeKey, userId, normal);
    });
    await store.replaceRecoveryCodes(userId, digests, epochSeconds(clock));
    metrics.secondFactorEvents.inc({ factor: 'recovery_code', event: 'enrolled' });
    audit(request, 'second_factor.recovery_codes_generated', { userId });
    return renderPage(request, reply, services, 'recovery_codes', { title: 'Your recovery codes', codes, continueTo: returnTo ?? '/account/security' });
  }

  app.get('/account/security', page, async (request, reply) => {
    const { return_to } = parseFields(pageQuery, request.query);
    const returnTo = returnToOf(return_to);
    const signedIn = await currentSession(request, services);
    if (!signedIn) return reply.redirect(`/login?return_to=${encodeURIComponent(here(returnTo))}`, 303);
    return showOverview(request, reply, signedIn, returnTo);
  });

  // ─── TOTP ───────────────────────────────────────────────────────────────────────────────────

  /** The secret being set up travels sealed in the form, bound to this person, for ten minutes. */
  const setupContext = (userId: string) => `totp_setup:${userId}`;
  const setupSchema = z.object({ secret: z.string().regex(/^[A-Z2-7]{16,64}$/), expiresAt: z.number().int() });

  async function showTotpSetup(
    request: FastifyRequest,
    reply: FastifyReply,
    signedIn: SignedIn,
    secret: string,
    returnTo: string | undefined,
    error?: string,
    status = 200,
  ) {
    allowFormsToEndAtClient(request, reply, returnTo);
    const sealed = services.secretBox.seal(setupContext(signedIn.user.id), JSON.stringify({ secret, expiresAt: epochSeconds(clock) + totpSetupLifetime }));
    const uri = totpUri(secret, signedIn.user.username, config.productName);
    return renderPage(
      request,
      reply,
      services,
      'totp_setup',
      {
        title: 'Set up an authenticator app',
        csrfToken: await csrfToken(request, reply, services, 'account_security'),
        // An SVG made here from our own text (no script, no external reference): safe to inline.
        qrSvg: await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }),
        secret: spacedSecret(secret),
        uri,
        setup: sealed,
        replaces: (await store.findTotp(signedIn.user.id)) !== undefined,
        returnTo,
        error,
      },
      status,
    );
  }

  app.get('/account/security/totp', page, async (request, reply) => {
    const { return_to } = parseFields(pageQuery, request.query);
    const returnTo = returnToOf(return_to);
    const guarded = await guard(request, reply, false, returnTo);
    if (!guarded.ok) return guarded.reply;
    if (!mayEnroll(request, reply, guarded.signedIn, guarded.factors)) return enrolmentRefused(request, reply, guarded.signedIn, returnTo, 'totp');
    return showTotpSetup(request, reply, guarded.signedIn, newTotpSecret(), returnTo);
  });

  app.post('/account/security/totp', page, async (request, reply) => {
    const form = parseFields(totpForm, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const { signedIn, factors } = guarded;
    if (!mayEnroll(request, reply, signedIn, factors)) return enrolmentRefused(request, reply, signedIn, returnTo, 'totp');
    const userId = signedIn.user.id;
    let setup: z.infer<typeof setupSchema> | undefined;
    try {
      const parsed = setupSchema.safeParse(JSON.parse(services.secretBox.open(setupContext(userId), form.setup)));
      setup = parsed.success ? parsed.data : undefined;
    } catch {
      setup = undefined;
    }
    const now = epochSeconds(clock);
    if (!setup || now >= setup.expiresAt) {
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'This set-up has expired',
          message: 'Start again: you will get a new code to scan.',
          link: { href: `/account/security/totp${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`, label: 'Start again' },
        },
        400,
      );
    }
    const step = totpStepOf(setup.secret, form.otp, clock());
    if (step === undefined) {
      metrics.secondFactorEvents.inc({ factor: 'totp', event: 'failure' });
      return showTotpSetup(
        request,
        reply,
        signedIn,
        setup.secret,
        returnTo,
        'That code isn’t right. Check the app shows Latchkey’s new entry, and type its current code.',
        400,
      );
    }
    // The confirming code is spent already: it cannot sign anyone in a second time.
    await store.saveTotp({ userId, secret: services.secretBox.seal(totpSecretContext(userId), setup.secret), lastStep: step, createdAt: now });
    metrics.secondFactorEvents.inc({ factor: 'totp', event: 'enrolled' });
    audit(request, 'second_factor.enrolled', { userId, factor: 'totp', replaced: factors.totp });
    sendSecurityNoticesLater(services, request, signedIn.user, { kind: 'factor_enrolled', factor: 'totp', replaced: factors.totp });
    return afterEnrollment(request, reply, signedIn, factors, ['otp'], returnTo);
  });

  /**
   * Under LATCHKEY_MFA=required nobody is left without a factor; nor is an administrator, whose
   * next first factor would need an enrolment link from someone else.
   */
  function lastFactorRefused(request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn, remaining: SecondFactors, returnTo: string | undefined) {
    const administrator = signedIn.user.roles.includes(adminRole);
    if ((config.mfa !== 'required' && !administrator) || hasSecondFactor(remaining)) return undefined;
    const message =
      config.mfa === 'required'
        ? 'This server requires one. Add another (a passkey or an authenticator app) before you remove this one.'
        : 'Your account holds the admin role: without a factor, a new one would need an enrolment link from another administrator. Add another (a passkey or an authenticator app) before you remove this one.';
    return renderErrorPage(
      request,
      reply,
      services,
      { heading: 'This is your last second factor', message, link: { href: here(returnTo), label: 'Back to security' } },
      409,
    );
  }

  app.post('/account/security/totp/remove', page, async (request, reply) => {
    const form = parseFields(plainForm, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const { signedIn, factors } = guarded;
    const refused = lastFactorRefused(request, reply, signedIn, { ...factors, totp: false }, returnTo);
    if (refused) return refused;
    if (await store.removeTotp(signedIn.user.id)) {
      metrics.secondFactorEvents.inc({ factor: 'totp', event: 'removed' });
      audit(request, 'second_factor.removed', { userId: signedIn.user.id, factor: 'totp' });
      sendSecurityNoticesLater(services, request, signedIn.user, { kind: 'factor_removed', factor: 'totp' });
    }
    return reply.redirect(here(returnTo), 303);
  });

  // ─── Passkeys ───────────────────────────────────────────────────────────────────────────────

  app.post('/account/security/passkeys/options', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const form = parseFields(plainForm, request.body);
    const signedIn = await currentSession(request, services);
    if (!signedIn || !(await csrfTokenValid(request, services, 'account_security', form.csrf_token))) {
      throw new OAuthError('invalid_request', 'The form has expired. Reload the page.', { status: 403 });
    }
    const rp = relyingParty(config);
    if (!rp) throw new OAuthError('invalid_request', 'Passkeys are not available on this server.');
    const factors = await secondFactorsOf(store, signedIn.user.id);
    if (epochSeconds(clock) - signedIn.session.authTime > recentSignInSeconds || (hasSecondFactor(factors) && !isMultiFactor(signedIn.session.amr))) {
      throw new OAuthError('invalid_request', 'Sign in again to add a passkey.', { status: 401 });
    }
    if (!mayEnroll(request, reply, signedIn, factors)) {
      audit(request, 'second_factor.enrolment_refused', { userId: signedIn.user.id, factor: 'passkey', reason: 'no_enrolment_link' });
      throw new OAuthError(
        'access_denied',
        `Your account holds the admin role: ask an administrator to run \`${enrolCommand(signedIn.user.username)}\`, then open the link they give you.`,
        { status: 403 },
      );
    }
    const passkeys = await store.listPasskeys(signedIn.user.id);
    if (passkeys.length >= maxPasskeys) throw new OAuthError('invalid_request', `You have ${maxPasskeys} passkeys: remove one first.`, { status: 409 });
    const options = await registrationOptions(rp, signedIn.user, passkeys);
    saveChallenge(reply, services, 'register', options.challenge, signedIn.user.id);
    return options;
  });

  app.post('/account/security/passkeys', page, async (request, reply) => {
    const form = parseFields(passkeyForm, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const { signedIn, factors } = guarded;
    if (!mayEnroll(request, reply, signedIn, factors)) return enrolmentRefused(request, reply, signedIn, returnTo, 'passkey');
    const userId = signedIn.user.id;
    const back = { href: here(returnTo), label: 'Back to security' };
    const rp = relyingParty(config);
    const now = epochSeconds(clock);
    const name = passkeyName(form.name, `Passkey added ${new Date(now * 1000).toISOString().slice(0, 10)}`);
    if (name === undefined)
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Choose another name', message: 'A passkey’s name is at most 64 characters, without control characters.', link: back },
        400,
      );
    const challenge = takeChallenge(request, reply, services, 'register', userId);
    const response = parseRegistrationResponse(form.credential);
    const registered = rp && challenge && response ? await verifyRegistration(rp, response, challenge) : undefined;
    if (!registered) {
      metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'failure' });
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'The passkey was not added', message: 'Your browser’s answer could not be verified. Try again.', link: back },
        400,
      );
    }
    if ((await store.listPasskeys(userId)).length >= maxPasskeys) {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'The passkey was not added', message: `You have ${maxPasskeys} passkeys: remove one first.`, link: back },
        409,
      );
    }
    try {
      await store.createPasskey({ ...registered, userId, name, createdAt: now, lastUsedAt: undefined });
    } catch (err) {
      if (!(err instanceof DuplicateError)) throw err;
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'The passkey was not added', message: 'This passkey is registered already.', link: back },
        409,
      );
    }
    metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'enrolled' });
    audit(request, 'second_factor.enrolled', { userId, factor: 'passkey' });
    sendSecurityNoticesLater(services, request, signedIn.user, { kind: 'factor_enrolled', factor: 'passkey' });
    return afterEnrollment(request, reply, signedIn, factors, ['hwk', 'user'], returnTo);
  });

  app.post('/account/security/passkeys/rename', page, async (request, reply) => {
    const form = parseFields(passkeyChange, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const name = passkeyName(form.name, '');
    if (!name)
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'Choose another name',
          message: 'A passkey’s name is 1-64 characters, without control characters.',
          link: { href: here(returnTo), label: 'Back to security' },
        },
        400,
      );
    if (await store.renamePasskey(guarded.signedIn.user.id, form.id, name))
      audit(request, 'second_factor.renamed', { userId: guarded.signedIn.user.id, factor: 'passkey' });
    return reply.redirect(here(returnTo), 303);
  });

  app.post('/account/security/passkeys/remove', page, async (request, reply) => {
    const form = parseFields(passkeyChange, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const { signedIn, factors } = guarded;
    const owned = (await store.listPasskeys(signedIn.user.id)).some((p) => p.id === form.id);
    if (owned) {
      const refused = lastFactorRefused(request, reply, signedIn, { ...factors, passkeys: factors.passkeys - 1 }, returnTo);
      if (refused) return refused;
    }
    if (owned && (await store.removePasskey(signedIn.user.id, form.id))) {
      metrics.secondFactorEvents.inc({ factor: 'passkey', event: 'removed' });
      audit(request, 'second_factor.removed', { userId: signedIn.user.id, factor: 'passkey' });
      sendSecurityNoticesLater(services, request, signedIn.user, { kind: 'factor_removed', factor: 'passkey' });
    }
    return reply.redirect(here(returnTo), 303);
  });

  // ─── Recovery codes ─────────────────────────────────────────────────────────────────────────

  app.post('/account/security/recovery-codes', page, async (request, reply) => {
    const form = parseFields(plainForm, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    if (!hasSecondFactor(guarded.factors)) {
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'Set up a second factor first',
          message: 'Recovery codes stand in for a passkey or an authenticator app you have lost.',
          link: { href: here(returnTo), label: 'Back to security' },
        },
        400,
      );
    }
    // New codes replace the old ones at once: a list that may have been seen is dead.
    sendSecurityNoticesLater(services, request, guarded.signedIn.user, { kind: 'recovery_codes_replaced' });
    return showRecoveryCodes(request, reply, guarded.signedIn.user.id, returnTo);
  });

  // ─── Enrolment links (the first factor of an administrator) ──────────────────────────────────

  /** The link's own address, to come back to after signing in (the secret is in it, as in a reset link). */
  const enrolHere = (secret: string | undefined, returnTo: string | undefined) => {
    const query = new URLSearchParams({
      ...(secret === undefined ? {} : { code: secret }),
      ...(returnTo === undefined ? {} : { return_to: returnTo }),
    }).toString();
    return `${enrolmentPath}${query === '' ? '' : `?${query}`}`;
  };
  const expiredLink = (returnTo: string | undefined) => ({
    heading: 'This enrolment link has expired or was used',
    message: 'An enrolment link works once, for the account it was made for, until the time it was given for. Ask the administrator for a new one.',
    link: { href: here(returnTo), label: 'Back to security' },
  });

  // Opening the link spends nothing (previews and scanners open links too): the form does.
  app.get(enrolmentPath, page, async (request, reply) => {
    const { code, return_to } = parseFields(enrolQuery, request.query);
    const returnTo = returnToOf(return_to);
    const secret = code === undefined ? undefined : enrolmentSecretIn(code);
    if (secret === undefined) return renderErrorPage(request, reply, services, expiredLink(returnTo), 400);
    const signedIn = await currentSession(request, services);
    if (!signedIn) return reply.redirect(`/login?return_to=${encodeURIComponent(enrolHere(secret, returnTo))}`, 303);
    // The form that spends the link asks for a recent sign-in: ask for it now, and come back here.
    if (epochSeconds(clock) - signedIn.session.authTime > recentSignInSeconds)
      return reply.redirect(`/login?fresh=1&return_to=${encodeURIComponent(enrolHere(secret, returnTo))}`, 303);
    const factors = await secondFactorsOf(store, signedIn.user.id);
    return renderPage(request, reply, services, 'factor_enrolment', {
      title: 'Set up your second factor',
      csrfToken: await csrfToken(request, reply, services, 'account_security'),
      username: signedIn.user.username,
      hasFactor: hasSecondFactor(factors),
      code: secret,
      returnTo,
      back: here(returnTo),
    });
  });

  app.post(enrolmentPath, page, async (request, reply) => {
    const form = parseFields(enrolForm, request.body);
    const returnTo = returnToOf(form.return_to);
    const guarded = await guard(request, reply, form.csrf_token, returnTo);
    if (!guarded.ok) return guarded.reply;
    const { signedIn, factors } = guarded;
    // A person with a factor needs no link: theirs stays unspent for another time.
    if (hasSecondFactor(factors)) return reply.redirect(here(returnTo), 303);
    const secret = enrolmentSecretIn(form.code);
    if (secret === undefined) {
      return renderErrorPage(
        request,
        reply,
        services,
        {
          heading: 'That is not an enrolment link',
          message: 'Paste the whole link the administrator gave you (it starts with the address of this server), or the code in it that starts with lk_fe_.',
          link: { href: here(returnTo), label: 'Back to security' },
        },
        400,
      );
    }
    const outcome = await spendEnrolmentLink(store, secret, signedIn.user.id, epochSeconds(clock));
    if (outcome !== 'spent') {
      audit(request, 'second_factor.enrolment_link_refused', { userId: signedIn.user.id, reason: outcome });
      return renderErrorPage(request, reply, services, expiredLink(returnTo), 400);
    }
    grantEnrolmentPermit(request, reply, services, signedIn, epochSeconds(clock));
    audit(request, 'second_factor.enrolment_link_used', { userId: signedIn.user.id });
    return reply.redirect(here(returnTo), 303);
  });
}
