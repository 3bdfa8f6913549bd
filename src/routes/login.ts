/**
 * Sign-in and sign-out for people. A sign-in always issues a fresh session id (no fixation); an
 * unknown username costs the same scrypt time as a wrong password; the place to return to after
 * sign-in must be a path on this server (no open redirect). Logout is a POST with a CSRF token,
 * so no other site can sign a person out.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { decoyPasswordHash, verifyPassword } from '../crypto/password.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { currentSession, endSession, startSession } from '../http/session.js';

const loginQuery = z.object({ return_to: z.string().max(2048).optional() });

const loginForm = z.object({
  username: z.string().max(256).default(''),
  password: z.string().max(1024).default(''),
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(2048).optional(),
});

const logoutForm = z.object({ csrf_token: z.string().max(256).optional() });

export const formExpiredPage = {
  heading: 'This form has expired',
  message: 'For your security the form could not be accepted. Go back, reload the page and try again.',
};

export async function loginRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, csrfSecret } = services;
  const page = { config: { page: true } };

  app.get('/login', page, async (request, reply) => {
    const { return_to } = parseFields(loginQuery, request.query);
    const returnTo = safeReturnTo(return_to);
    if (await currentSession(request, services)) return reply.redirect(returnTo, 303);
    return renderPage(request, reply, services, 'login', {
      title: 'Sign in',
      csrfToken: csrfToken(request, reply, config, csrfSecret, 'login'),
      returnTo,
      username: '',
      error: undefined,
    });
  });

  app.post('/login', page, async (request, reply) => {
    const form = parseFields(loginForm, request.body);
    const returnTo = safeReturnTo(form.return_to);
    if (!csrfTokenValid(request, config, csrfSecret, 'login', form.csrf_token)) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: `/login?return_to=${encodeURIComponent(returnTo)}`, label: 'Sign in' } }, 403);
    }
    const again = (error: string, status: number) =>
      renderPage(
        request,
        reply,
        services,
        'login',
        { title: 'Sign in', csrfToken: csrfToken(request, reply, config, csrfSecret, 'login'), returnTo, username: form.username, error },
        status,
      );
    if (form.username === '' || form.password === '') return again('Enter your username and password.', 400);

    const user = await store.findUserByUsername(form.username);
    const passwordMatches = await verifyPassword(form.password, user?.passwordHash ?? (await decoyPasswordHash()));
    if (!user || !passwordMatches) {
      request.log.info({ event: 'signin.failure', username: form.username.slice(0, 64), reason: user ? 'password' : 'unknown_user' });
      return again('Wrong username or password.', 401);
    }
    if (user.disabled) {
      request.log.info({ event: 'signin.failure', userId: user.id, reason: 'disabled' });
      return again('This account is disabled. Ask your administrator.', 403);
    }
    await startSession(request, reply, services, user);
    request.log.info({ event: 'signin.success', userId: user.id });
    return reply.redirect(returnTo, 303);
  });

  app.get('/logout', page, async (request, reply) => {
    const signedIn = await currentSession(request, services);
    return renderPage(request, reply, services, 'logout', {
      title: 'Sign out',
      signedOut: !signedIn,
      username: signedIn?.user.username,
      csrfToken: signedIn ? csrfToken(request, reply, config, csrfSecret, 'logout') : undefined,
    });
  });

  app.post('/logout', page, async (request, reply) => {
    const form = parseFields(logoutForm, request.body);
    if (!csrfTokenValid(request, config, csrfSecret, 'logout', form.csrf_token)) {
      return renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: '/logout', label: 'Sign out' } }, 403);
    }
    const signedIn = await currentSession(request, services);
    await endSession(request, reply, services);
    if (signedIn) request.log.info({ event: 'signout', userId: signedIn.user.id });
    return renderPage(request, reply, services, 'logout', { title: 'Signed out', signedOut: true });
  });

  app.get('/', page, async (_request, reply) => reply.redirect('/activate', 303));
}
