/**
 * /account: what a signed-in person controls about their own account — name and email,
 * their password, "Linked sign-ins": the upstream identities that sign them in (a link made by
 * email is a way in that a new password does not touch), each removable while another way in
 * remains (connectors/linked_identities.ts), "Devices and apps": every live browser session and
 * every refresh-token family (a CLI, a TV, an app) signed in as them, each with a revoke button,
 * "Sign out everywhere", and the applications they consented to, each withdrawable (which ends
 * that application's sign-ins too).
 *
 * Every change is a CSRF-protected form. Changing the email (where password-reset links go) needs
 * a sign-in of the last 15 minutes; changing the password needs the current one, counted in the
 * sign-in back-off like any password guess. Every change is audited; a new password and a new
 * email are told to the person by mail (to the old address and the new one for an email change).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { newPasswordInput, ownProfileInput } from '../account/self_service_input.js';
import { epochSeconds } from '../clock.js';
import { hashPassword, verifyPassword } from '../crypto/password.js';
import { audit } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage } from '../http/pages.js';
import { upgradeOutdatedPasswordHash } from '../http/password_upgrade.js';
import { currentSession, endSession, startSession, type SignedIn } from '../http/session.js';
import { startSignInAttempt } from '../http/signin_attempt.js';
import { notifyBackchannelLogoutLater } from '../oauth/backchannel_logout.js';
import { sendSecurityNoticesLater } from '../mail/security_notice_sender.js';
import type { ClientRecord, SessionRecord } from '../store/store.js';
import { recentSignInSeconds } from '../account/recent_sign_in.js';
import { sendVerificationEmail } from '../mail/mailed_links.js';
import { signInRows } from '../http/sign_ins.js';
import { anotherWayIn, linkedIdentities, removableConnectors, serviceNames, type LinkedIdentity } from '../connectors/linked_identities.js';

const csrfField = z.string().max(256).optional();
const profileForm = z.object({
  csrf_token: csrfField,
  name: z.string().max(1024).default(''),
  email: z.string().max(1024).default(''),
  current_password: z.string().max(1024).default(''),
});
const passwordForm = z.object({
  csrf_token: csrfField,
  current_password: z.string().max(1024).default(''),
  new_password: z.string().max(4096).default(''),
  keep_other_sign_ins: z.string().max(8).optional(),
});
const revokeForm = z.object({ csrf_token: csrfField, revoke: z.string().max(128).default('') });
const withdrawForm = z.object({ csrf_token: csrfField, client_id: z.string().max(256).default('') });
const unlinkForm = z.object({ csrf_token: csrfField, connector: z.string().max(64).default('') });
const plainForm = z.object({ csrf_token: csrfField });

/** The date and minute, in UTC, as the pages show times. */
function when(epoch: number | undefined): string | undefined {
  return epoch === undefined ? undefined : `${new Date(epoch * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** After a new password: the ways in it did not change, said on the confirmation (never silently kept). */
function stillLinked(identities: readonly LinkedIdentity[]): string {
  if (identities.length === 0) return '';
  const it = new Set(identities.map((i) => i.connectorId)).size === 1 ? 'it' : 'them';
  return ` ${serviceNames(identities)} can still sign you in: remove ${it} under “Linked sign-ins” if you did not link ${it} or no longer use ${it}.`;
}

export async function accountRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };
  const signInFirst = '/login?return_to=%2Faccount';

  async function showAccount(
    request: FastifyRequest,
    reply: FastifyReply,
    signedIn: SignedIn,
    notice?: { kind: 'notice' | 'error'; text: string; about?: string },
    status = 200,
  ) {
    const { user, session } = signedIn;
    const now = epochSeconds(clock);
    const [sessions, families, consents, clients, identities] = await Promise.all([
      store.listSessions(user.id, now),
      store.listRefreshFamilies(user.id, now),
      store.listConsents(user.id),
      store.listClients(),
      linkedIdentities(store, user.id),
    ]);
    const removable = await removableConnectors(store, services.config, user, identities);
    const clientName = new Map<string, string>(clients.map((c: ClientRecord) => [c.clientId, c.name]));
    const nameOf = (clientId: string) => clientName.get(clientId) ?? clientId;
    const signIns = signInRows(sessions, families, session.id, (at) => when(at) ?? '').map((row) => ({
      ...row,
      label: row.kind === 'app' ? nameOf(row.clientId) : row.current ? 'This browser' : 'A browser',
    }));
    return renderPage(
      request,
      reply,
      services,
      'account',
      {
        title: 'Your account',
        csrfToken: await csrfToken(request, reply, services, 'account'),
        name: user.name ?? '',
        email: user.email,
        emailVerified: user.emailVerified,
        hasPassword: user.passwordHash !== 'upstream',
        canVerifyEmail: services.mailer !== undefined && !user.emailVerified,
        recent: now - session.authTime <= recentSignInSeconds,
        signIns,
        linked: identities.map((i) => ({
          connectorId: i.connectorId,
          name: i.connectorName,
          linked: when(i.linkedAt),
          lastUsed: when(i.lastSignInAt),
          removable: removable.has(i.connectorId),
        })),
        passkeysSignIn: anotherWayIn(services.config).passkeysSignIn,
        consents: consents.map((c) => ({ clientId: c.clientId, name: nameOf(c.clientId), scope: c.scope, granted: when(c.grantedAt) })),
        notice,
      },
      status,
    );
  }

  const tellClients = (request: FastifyRequest, sessions: SessionRecord[]) => notifyBackchannelLogoutLater(services, sessions, request);

  /** The person's current password, checked as a password guess like any other (counted in the sign-in back-off). */
  async function currentPasswordRight(request: FastifyRequest, user: SignedIn['user'], typed: string, reason: string): Promise<boolean> {
    const attempt = await startSignInAttempt(request, services, user.username);
    const right = await attempt.run(() => verifyPassword(typed, user.passwordHash));
    await attempt.finish(right);
    if (!right) audit(request, 'signin.failure', { userId: user.id, reason });
    return right;
  }

  /** Signed in and a valid form, or the reply that says why not. */
  async function guard(
    request: FastifyRequest,
    reply: FastifyReply,
    csrf: string | undefined,
  ): Promise<{ ok: true; signedIn: SignedIn } | { ok: false; reply: FastifyReply }> {
    const signedIn = await currentSession(request, services);
    if (!signedIn) return { ok: false, reply: await reply.redirect(signInFirst, 303) };
    if (!(await csrfTokenValid(request, services, 'account', csrf))) {
      return {
        ok: false,
        reply: await renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/account', label: 'Back to your account' } }, 403),
      };
    }
    return { ok: true, signedIn };
  }

  app.get('/account', page, async (request, reply) => {
    const signedIn = await currentSession(request, services);
    if (!signedIn) return reply.redirect(signInFirst, 303);
    return showAccount(request, reply, signedIn);
  });

  app.post('/account/profile', page, async (request, reply) => {
    const form = parseFields(profileForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { signedIn } = guarded;
    const { user } = signedIn;
    const typed = ownProfileInput(form.name, form.email);
    if (typed === undefined) {
      return showAccount(
        request,
        reply,
        signedIn,
        { kind: 'error', text: 'Enter a name of at most 256 characters and a valid email address.', about: 'profile' },
        400,
      );
    }
    const { name, email } = typed;
    const emailChanged = email.toLowerCase() !== user.email.toLowerCase();
    // Reset links go to this address, so changing it is as good as knowing the password: it needs
    // the password (counted as a guess), or — for people who have none here — a recent sign-in.
    if (emailChanged && user.passwordHash !== 'upstream') {
      if (!(await currentPasswordRight(request, user, form.current_password, 'account_email_change'))) {
        return showAccount(request, reply, signedIn, { kind: 'error', text: 'To change your email, enter your current password.', about: 'profile' }, 401);
      }
      // Proven like at a sign-in: a hash of an older kind is stored anew (a password change needs no such step).
      await upgradeOutdatedPasswordHash(request, services, user, form.current_password);
    } else if (emailChanged && epochSeconds(clock) - signedIn.session.authTime > recentSignInSeconds) {
      return showAccount(
        request,
        reply,
        signedIn,
        { kind: 'error', text: 'Changing your email needs a sign-in from the last 15 minutes. Sign out and sign in again first.', about: 'profile' },
        401,
      );
    }
    await store.updateUserProfile(user.id, { name, email }, epochSeconds(clock));
    audit(request, 'user.profile_changed', { userId: user.id, emailChanged });
    const updated = await reloaded(signedIn);
    // The address before hears of it too: should someone else have made the change, reset links no longer reach the owner.
    if (emailChanged) sendSecurityNoticesLater(services, request, updated.user, { kind: 'email_changed', previous: user.email });
    const mailed = emailChanged ? await sendVerificationEmail(services, updated.user, request) : undefined;
    const text =
      mailed === 'sent' ? 'Saved. We sent a link to your new address to verify it.' : emailChanged ? 'Saved. Your new email is not verified yet.' : 'Saved.';
    return showAccount(request, reply, updated, { kind: 'notice', text });
  });

  /** The signed-in person as stored now (after a change to the user row). */
  async function reloaded(signedIn: SignedIn): Promise<SignedIn> {
    const user = await store.findUserById(signedIn.user.id);
    return user ? { session: signedIn.session, user } : signedIn;
  }

  app.post('/account/password', page, async (request, reply) => {
    const form = parseFields(passwordForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { signedIn } = guarded;
    const { user, session } = signedIn;
    if (user.passwordHash === 'upstream') {
      return showAccount(
        request,
        reply,
        signedIn,
        { kind: 'error', text: 'You sign in through another identity provider: there is no password here to change.', about: 'password' },
        400,
      );
    }
    const newPassword = newPasswordInput(form.new_password);
    if (newPassword === undefined) {
      return showAccount(request, reply, signedIn, { kind: 'error', text: 'The new password must be 8 to 1024 characters.', about: 'password' }, 400);
    }
    if (!(await currentPasswordRight(request, user, form.current_password, 'account_password_change'))) {
      return showAccount(request, reply, signedIn, { kind: 'error', text: 'Your current password is not right.', about: 'password' }, 401);
    }
    const hash = await hashPassword(newPassword);
    const keepOthers = form.keep_other_sign_ins === '1';
    const now = epochSeconds(clock);
    if (keepOthers) {
      await store.updateUserPassword(user.id, hash);
    } else {
      // Everything ends, this browser too (one step, as `users passwd`), then this browser signs in afresh.
      const ended = await store.listSessions(user.id, now);
      await store.setUserPassword(user.username, hash, now);
      tellClients(request, ended);
    }
    audit(request, 'user.password_changed', { userId: user.id, source: 'account', endedOtherSignIns: !keepOthers });
    sendSecurityNoticesLater(services, request, user, { kind: 'password_changed', how: 'changed' });
    const linked = stillLinked(await linkedIdentities(store, user.id));
    if (keepOthers) return showAccount(request, reply, signedIn, { kind: 'notice', text: `Your password was changed. Your other sign-ins continue.${linked}` });
    const fresh = await store.findUserById(user.id);
    const again = fresh && (await startSession(request, reply, services, fresh, { amr: session.amr, signedInAt: now }));
    if (!again) return reply.redirect(signInFirst, 303);
    return showAccount(request, reply, again, { kind: 'notice', text: `Your password was changed, and every other sign-in has ended.${linked}` });
  });

  app.post('/account/linked-sign-ins/remove', page, async (request, reply) => {
    const form = parseFields(unlinkForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { signedIn } = guarded;
    const { user, session } = signedIn;
    const now = epochSeconds(clock);
    // Only the person's own links: the store removes the identities of this connector bound to them, none of anyone else's.
    const identities = await linkedIdentities(store, user.id);
    const target = identities.find((i) => i.connectorId === form.connector);
    if (!target) return showAccount(request, reply, signedIn, { kind: 'error', text: 'That service is not linked to your account.', about: 'linked' }, 404);
    const ended = await store.listSessions(user.id, now);
    const removed = await store.unlinkIdentity(user.id, target.connectorId, now, anotherWayIn(services.config));
    if (removed === 'last_way_in') {
      const how = anotherWayIn(services.config).passkeysSignIn
        ? 'Add a passkey under “Sign-in security” first, or ask an administrator to set a password.'
        : 'Ask an administrator to set a password for you first.';
      return showAccount(
        request,
        reply,
        signedIn,
        { kind: 'error', text: `${target.connectorName} is the only way you sign in here, so it cannot be removed. ${how}`, about: 'linked' },
        409,
      );
    }
    if (removed.length === 0)
      return showAccount(request, reply, signedIn, { kind: 'error', text: 'That service is not linked to your account.', about: 'linked' }, 404);
    audit(request, 'user.identity_unlinked', { userId: user.id, connectorId: target.connectorId, subjects: removed.map((i) => i.subject), source: 'account' });
    tellClients(request, ended);
    // Everything the person held ended with the link (whoever came in through it is out); this
    // browser, where the person just chose it, signs in again at once, as after a new password.
    const fresh = await store.findUserById(user.id);
    const again =
      fresh && (await startSession(request, reply, services, fresh, { amr: session.amr, signedInAt: session.authTime, expiresAt: session.expiresAt }));
    if (!again) return reply.redirect(signInFirst, 303);
    return showAccount(request, reply, again, {
      kind: 'notice',
      text: `${target.connectorName} no longer signs you in here, and every other sign-in has ended.`,
    });
  });

  app.post('/account/revoke', page, async (request, reply) => {
    const form = parseFields(revokeForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { signedIn } = guarded;
    const userId = signedIn.user.id;
    const now = epochSeconds(clock);
    if (form.revoke === signedIn.session.id) {
      await endSession(request, reply, services);
      audit(request, 'session.revoked', { userId, kind: 'browser', source: 'account', current: true });
      tellClients(request, [signedIn.session]);
      return renderPage(request, reply, services, 'logout', { title: 'Signed out' });
    }
    const session = form.revoke === '' ? undefined : await store.endSessionById(form.revoke, userId);
    const family = session || form.revoke === '' ? undefined : await store.revokeRefreshFamilyOf(form.revoke, userId, now);
    if (session) {
      audit(request, 'session.revoked', { userId, kind: 'browser', source: 'account' });
      tellClients(request, [session]);
    }
    if (family) audit(request, 'session.revoked', { userId, kind: 'app', clientId: family.clientId, source: 'account' });
    const text = session ? 'That browser was signed out.' : family ? 'That device or app was signed out.' : 'That sign-in had ended already.';
    return showAccount(request, reply, signedIn, { kind: 'notice', text });
  });

  app.post('/account/sign-out-everywhere', page, async (request, reply) => {
    const form = parseFields(plainForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { user } = guarded.signedIn;
    const sessions = await store.listSessions(user.id, epochSeconds(clock));
    // Every session and refresh family, and the access tokens issued until now (refused at userinfo and introspection).
    await store.revokeUserTokens(user.username, epochSeconds(clock));
    tellClients(request, sessions);
    await endSession(request, reply, services);
    audit(request, 'user.tokens_revoked', { userId: user.id, source: 'account' });
    return renderPage(request, reply, services, 'logout', { title: 'Signed out', everywhere: true });
  });

  app.post('/account/consents/withdraw', page, async (request, reply) => {
    const form = parseFields(withdrawForm, request.body);
    const guarded = await guard(request, reply, form.csrf_token);
    if (!guarded.ok) return guarded.reply;
    const { signedIn } = guarded;
    // Only a consent the person gave (their other sign-ins have their own Sign out buttons).
    const given = form.client_id !== '' && (await store.listConsents(signedIn.user.id)).some((c) => c.clientId === form.client_id);
    const removed = given ? await store.withdrawConsent(signedIn.user.id, form.client_id, epochSeconds(clock)) : 0;
    if (removed > 0) audit(request, 'consent.withdrawn', { userId: signedIn.user.id, clientId: form.client_id });
    return showAccount(request, reply, signedIn, {
      kind: 'notice',
      text: removed > 0 ? 'Access withdrawn: the application was signed out and will ask again.' : 'That application had no access.',
    });
  });
}
