/**
 * "Forgot your password?" and email verification by mail, when LATCHKEY_SMTP_URL is set.
 *
 * The answer to /login/forgot is the same page, status and time whether or not an account uses the
 * address: everything that depends on the account (looking it up, the per-account limit, the link,
 * the mail: mail/mailed_links.ts) happens after the answer is decided, off the request. A link is
 * spent by one conditional UPDATE
 * (store.useEmailToken); opening a reset link spends nothing (mail scanners open links), only the
 * form that sets the new password does. A new password ends every sign-in of the account. The
 * form names the upstream identities linked to the account — ways in that a new password does not
 * touch — and offers to remove them in the same step (connectors/linked_identities.ts); what stays
 * linked is said again on the confirmation. Requests are limited per source address and per
 * account; the mail goes to the address stored for the account, never to the text typed. A
 * password set with a link is told to the account's address in a security notice
 * (mail/security_notice.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { newPasswordInput } from '../account/self_service_input.js';
import { epochSeconds } from '../clock.js';
import { hashPassword } from '../crypto/password.js';
import { sha256 } from '../crypto/secrets.js';
import { notifyBackchannelLogoutLater } from '../oauth/backchannel_logout.js';
import { tooManyRequests } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, type ErrorPage } from '../http/pages.js';
import { currentSession, endSession } from '../http/session.js';
import { afterTheAnswer, mailSettled } from '../mail/after_answer.js';
import { hasLocalPassword, isLinkSecret, sendPasswordResetLinks, sendVerificationEmail } from '../mail/mailed_links.js';
import { sendSecurityNoticesLater } from '../mail/security_notice_sender.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { linkedIdentities, serviceNames, type LinkedIdentity } from '../connectors/linked_identities.js';
import { pageLanguage } from '../i18n/page_language.js';

const csrfField = z.string().max(256).optional();
const linkField = z.string().max(1024);
const forgotForm = z.object({ csrf_token: csrfField, email: z.string().max(1024).default('') });
const linkQuery = z.object({ token: linkField.optional() });
const resetForm = z.object({
  csrf_token: csrfField,
  token: linkField.default(''),
  new_password: z.string().max(4096).default(''),
  remove_linked_sign_ins: z.string().max(8).optional(),
});
const plainForm = z.object({ csrf_token: csrfField });

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function looksLikeEmail(value: string): boolean {
  return value.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(value) && !/[\u0000-\u001f\u007f]/.test(value);
}

const expiredResetLink: ErrorPage = {
  heading: 'This link has expired or was used',
  message: 'A link to choose a new password works once, for 30 minutes. Ask for a new one.',
  link: { href: '/login/forgot', label: 'Ask for a new link' },
};

const expiredVerificationLink: ErrorPage = {
  heading: 'This link has expired or was used',
  message: 'A link to confirm your email works once, for 30 minutes. Ask for a new one on your account page.',
  link: { href: '/account', label: 'Your account' },
};

const unavailable: ErrorPage = {
  heading: 'Password reset is not available',
  message: 'This server does not send email. Ask your administrator to set a new password for you.',
  link: { href: '/login', label: 'Back to sign in' },
};

/** The CSRF token of the reset form is bound to the one link it answers. */
const resetBinding = (secret: string) => `reset:${sha256(secret)}`;

export async function passwordResetRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock, rateLimits } = services;
  const page = { config: { page: true } };

  // A mail on its way gets a moment to finish (each has its own time limits), no longer than a shutdown waits for requests.
  app.addHook('onClose', async () => {
    let timer: NodeJS.Timeout | undefined;
    const enough = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, services.config.shutdownTimeout * 1000);
      timer.unref();
    });
    await Promise.race([mailSettled(services), enough]);
    clearTimeout(timer);
    services.mailer?.close();
  });

  async function showForgot(request: FastifyRequest, reply: FastifyReply, email: string, error: string | undefined, status = 200) {
    return renderPage(
      request,
      reply,
      services,
      'forgot_password',
      { title: 'Forgot your password?', csrfToken: await csrfToken(request, reply, services, 'password_reset', 'forgot'), email, error, sent: false },
      status,
    );
  }

  /** The upstream identities linked to the account a usable link is for (looked up without spending it). */
  async function linkedToLink(secret: string): Promise<LinkedIdentity[]> {
    const link = await store.findEmailToken(sha256(secret), 'password_reset', epochSeconds(clock));
    return link ? linkedIdentities(store, link.userId) : [];
  }

  async function showReset(request: FastifyRequest, reply: FastifyReply, secret: string, error: string | undefined, status = 200) {
    const linked = await linkedToLink(secret);
    return renderPage(
      request,
      reply,
      services,
      'reset_password',
      {
        title: 'Choose a new password',
        csrfToken: await csrfToken(request, reply, services, 'password_reset', resetBinding(secret)),
        token: secret,
        error,
        done: false,
        linkedNames: serviceNames(linked, pageLanguage(request)),
      },
      status,
    );
  }

  app.get('/login/forgot', page, async (request, reply) => {
    if (services.mailer === undefined) return renderErrorPage(request, reply, services, unavailable, 404);
    return showForgot(request, reply, '', undefined);
  });

  app.post('/login/forgot', page, async (request, reply) => {
    if (services.mailer === undefined) return renderErrorPage(request, reply, services, unavailable, 404);
    const form = parseFields(forgotForm, request.body);
    if (!(await csrfTokenValid(request, services, 'password_reset', form.csrf_token, 'forgot'))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/login/forgot', label: 'Try again' } }, 403);
    }
    const email = form.email.trim();
    if (!looksLikeEmail(email)) return showForgot(request, reply, email.slice(0, 254), 'Enter the email address of your account.', 400);
    // Every request counts, whether or not an account uses the address: the limit tells nothing.
    const counted = await rateLimits.passwordResetAddress.hit(rateLimitKey(request.ip));
    if (counted.limited) throw tooManyRequests(counted.retryAfter, 'Too many requests. Wait a few minutes and try again.');
    afterTheAnswer(services, request.log, 'password reset request failed', () => sendPasswordResetLinks(services, request, email));
    // Not even the typed address is repeated: this page is the same for every request.
    return renderPage(request, reply, services, 'forgot_password', { title: 'Check your email', sent: true });
  });

  // Opening the link spends nothing (mail scanners and previews open links too): the form does.
  app.get('/login/reset', page, async (request, reply) => {
    const { token } = parseFields(linkQuery, request.query);
    if (token === undefined || !isLinkSecret('password_reset', token)) return renderErrorPage(request, reply, services, expiredResetLink, 400);
    return showReset(request, reply, token, undefined);
  });

  app.post('/login/reset', page, async (request, reply) => {
    const form = parseFields(resetForm, request.body);
    if (!isLinkSecret('password_reset', form.token)) return renderErrorPage(request, reply, services, expiredResetLink, 400);
    if (!(await csrfTokenValid(request, services, 'password_reset', form.csrf_token, resetBinding(form.token)))) {
      return renderErrorPage(
        request,
        reply,
        services,
        { ...formExpiredPage, message: 'For your security the form could not be accepted. Open the link in the email again.' },
        403,
      );
    }
    const newPassword = newPasswordInput(form.new_password);
    if (newPassword === undefined) {
      // The link is not spent: the person tries again with it.
      return showReset(request, reply, form.token, 'The new password must be 8 to 1024 characters.', 400);
    }
    // Spent before the (costly) hashing: an unknown link costs the server one lookup, not a password hash.
    const now = epochSeconds(clock);
    const spent = await store.useEmailToken(sha256(form.token), 'password_reset', now);
    const user = spent && (await store.findUserById(spent.userId));
    // Refused too: a link to an address the account no longer uses, and one sent before the
    // account's sign-ins were last ended (a new password, `revoke-tokens`, a disabled account).
    const usable =
      spent !== undefined &&
      user !== undefined &&
      !user.disabled &&
      hasLocalPassword(user) &&
      sameAddress(user.email, spent.email) &&
      (user.tokensRevokedAt === undefined || spent.createdAt >= user.tokensRevokedAt);
    // The sessions the new password ends, so that their clients hear of it (Back-Channel Logout).
    const endedSessions = usable ? await store.listSessions(user.id, now) : [];
    if (!usable || !(await store.setUserPassword(user.username, await hashPassword(newPassword), now))) {
      return renderErrorPage(request, reply, services, expiredResetLink, 400);
    }
    audit(request, 'user.password_reset', { userId: user.id });
    notifyBackchannelLogoutLater(services, endedSessions, request);
    sendSecurityNoticesLater(services, request, user, { kind: 'password_changed', how: 'reset_link' });
    // A reset is recovery: the person may cut the upstream ways in with it. (Without a guard: the
    // account has a password now.)
    const removed: LinkedIdentity[] = [];
    const linked = await linkedIdentities(store, user.id);
    if (form.remove_linked_sign_ins === '1') {
      for (const connectorId of new Set(linked.map((i) => i.connectorId))) {
        const gone = await store.unlinkIdentity(user.id, connectorId, now);
        if (gone === 'last_way_in' || gone.length === 0) continue;
        removed.push(...linked.filter((i) => i.connectorId === connectorId));
        audit(request, 'user.identity_unlinked', { userId: user.id, connectorId, subjects: gone.map((i) => i.subject), source: 'password_reset' });
      }
    }
    const remaining = removed.length === 0 ? linked : await linkedIdentities(store, user.id);
    // The store ended this browser's session too, if it was the account's: forget its cookie.
    const signedIn = await currentSession(request, services);
    if (signedIn?.user.id === user.id) await endSession(request, reply, services);
    return renderPage(request, reply, services, 'reset_password', {
      title: 'Your password was changed',
      done: true,
      username: user.username,
      removedNames: serviceNames(removed, pageLanguage(request)),
      remainingNames: serviceNames(remaining, pageLanguage(request)),
    });
  });

  app.post('/account/verify-email', page, async (request, reply) => {
    const form = parseFields(plainForm, request.body);
    const signedIn = await currentSession(request, services);
    if (!signedIn) return reply.redirect('/login?return_to=%2Faccount', 303);
    if (!(await csrfTokenValid(request, services, 'account', form.csrf_token))) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/account', label: 'Back to your account' } }, 403);
    }
    const outcome = await sendVerificationEmail(services, signedIn.user, request);
    const status = { sent: 200, verified_already: 200, limited: 429, failed: 503, unavailable: 404 }[outcome];
    if (outcome === 'limited') reply.header('retry-after', '3600');
    return renderPage(request, reply, services, 'verify_email', { title: 'Confirm your email', outcome, email: signedIn.user.email }, status);
  });

  app.get('/account/verify-email', page, async (request, reply) => {
    const { token } = parseFields(linkQuery, request.query);
    if (token === undefined || !isLinkSecret('email_verification', token)) return renderErrorPage(request, reply, services, expiredVerificationLink, 400);
    const spent = await store.useEmailToken(sha256(token), 'email_verification', epochSeconds(clock));
    if (!spent) return renderErrorPage(request, reply, services, expiredVerificationLink, 400);
    const verified = await store.markEmailVerified(spent.userId, spent.email);
    if (verified) audit(request, 'user.email_verified', { userId: spent.userId });
    return renderPage(
      request,
      reply,
      services,
      'verify_email',
      {
        title: verified ? 'Your email is verified' : 'Your email changed',
        outcome: verified ? 'verified' : 'changed',
        email: verified ? spent.email : undefined,
      },
      verified ? 200 : 400,
    );
  });
}
