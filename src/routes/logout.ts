/**
 * /logout: signing out, plainly (a link: GET or POST ends the session, as the contract has always
 * said) or as OIDC RP-Initiated Logout 1.0 when a client sends the person here with any of
 * `id_token_hint`, `post_logout_redirect_uri`, `client_id`, `state`:
 *
 * - an `id_token_hint` we signed (expired ones too, §2) for the signed-in person names the client
 *   and the session: sign out at once;
 * - without one — or with one that is not ours, or for someone else — the person is asked (a
 *   CSRF-protected decision form), since any site can link here (§6);
 * - `post_logout_redirect_uri` must be registered for that client, matched exactly (§3.1); a
 *   request naming an unregistered one is refused on a page and never redirected, and `state`
 *   goes back with the redirect.
 *
 * Every ended session tells its clients over the back channel (oauth/backchannel_logout.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { audit } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage } from '../http/pages.js';
import { allowFormActionTo } from '../http/security_headers.js';
import { currentSession, endSession, type SignedIn } from '../http/session.js';
import { notifyBackchannelLogoutLater } from '../oauth/backchannel_logout.js';
import { formActionSource } from '../oauth/redirect.js';
import type { ClientRecord } from '../store/store.js';

const logoutParams = z.object({
  id_token_hint: z.string().max(8192).optional(),
  post_logout_redirect_uri: z.string().max(2048).optional(),
  client_id: z.string().max(256).optional(),
  state: z.string().max(1024).optional(),
  logout_hint: z.string().max(1024).optional(),
  ui_locales: z.string().max(256).optional(),
  csrf_token: z.string().max(256).optional(),
  decision: z.enum(['logout', 'stay']).optional(),
});
type LogoutParams = z.infer<typeof logoutParams>;

/** The client the request is about and where to send the person after, once checked. */
interface CheckedRequest {
  client: ClientRecord | undefined;
  redirect: string | undefined;
  state: string | undefined;
  /** A hint we signed, for the signed-in person (or nobody is signed in): no need to ask. */
  trustedHint: boolean;
}

const isRpInitiated = (p: LogoutParams) =>
  p.id_token_hint !== undefined || p.post_logout_redirect_uri !== undefined || p.client_id !== undefined || p.state !== undefined;

export async function logoutRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, signer } = services;
  const page = { config: { page: true } };

  const refuse = (request: FastifyRequest, reply: FastifyReply, message: string) =>
    renderErrorPage(request, reply, services, { heading: 'This sign-out request cannot be used', message }, 400);

  /** Checks the client's part of the request; a string is why it is refused. */
  async function check(params: LogoutParams, signedIn: SignedIn | undefined): Promise<CheckedRequest | string> {
    const hint = params.id_token_hint === undefined || params.id_token_hint === '' ? undefined : await signer.idTokenHint(params.id_token_hint);
    if (hint && params.client_id !== undefined && !hint.aud.includes(params.client_id)) return 'The application and the sign-in it names do not match.';
    const clientId = params.client_id ?? (hint?.aud.length === 1 ? hint.aud[0] : undefined);
    const client = clientId === undefined ? undefined : await store.findClient(clientId);
    if (clientId !== undefined && !client) return 'The application is not known here.';
    const redirect = params.post_logout_redirect_uri;
    if (redirect !== undefined) {
      // §3.1: only an address registered for this very client, compared exactly; else no redirect at all.
      if (!client) return 'Say which application this is (client_id or id_token_hint) to be sent back to it.';
      if (!client.postLogoutRedirectUris.includes(redirect)) return 'That address to return to is not registered for the application.';
    }
    // Trusted: a hint for this very session (its sid), or for nobody signed in here. An older
    // id_token of the same person (another session) asks first, like no hint at all.
    const trustedHint =
      hint !== undefined && (signedIn === undefined || (signedIn.user.id === hint.sub && (hint.sid === undefined || hint.sid === signedIn.session.id)));
    return { client, redirect, state: params.state, trustedHint };
  }

  async function signOut(request: FastifyRequest, reply: FastifyReply, signedIn: SignedIn | undefined, via: 'link' | 'rp') {
    await endSession(request, reply, services);
    if (!signedIn) return;
    audit(request, via === 'rp' ? 'logout.rp_initiated' : 'signout', { userId: signedIn.user.id });
    notifyBackchannelLogoutLater(services, [signedIn.session], request);
  }

  function finish(reply: FastifyReply, redirect: string, state: string | undefined) {
    const target = new URL(redirect);
    if (state !== undefined) target.searchParams.set('state', state);
    return reply.redirect(target.toString(), 303);
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, raw: unknown) {
    const params = parseFields(logoutParams, raw);
    const signedIn = await currentSession(request, services);
    if (!isRpInitiated(params)) {
      await signOut(request, reply, signedIn, 'link');
      return renderPage(request, reply, services, 'logout', { title: 'Signed out' });
    }
    const checked = await check(params, signedIn);
    if (typeof checked === 'string') return refuse(request, reply, checked);

    if (params.decision !== undefined) {
      if (!(await csrfTokenValid(request, services, 'logout', params.csrf_token))) return renderErrorPage(request, reply, services, formExpiredPage, 403);
      if (params.decision === 'stay') return renderPage(request, reply, services, 'logout_stay', { title: 'Still signed in' });
      await signOut(request, reply, signedIn, 'rp');
      return checked.redirect === undefined
        ? renderPage(request, reply, services, 'logout', { title: 'Signed out' })
        : finish(reply, checked.redirect, checked.state);
    }
    if (checked.trustedHint || !signedIn) {
      await signOut(request, reply, signedIn, 'rp');
      return checked.redirect === undefined
        ? renderPage(request, reply, services, 'logout', { title: 'Signed out' })
        : finish(reply, checked.redirect, checked.state);
    }
    // Anyone can link here: the person confirms. The form ends, by redirect, at the client.
    allowFormActionTo(reply, checked.redirect && formActionSource(checked.redirect));
    return renderPage(request, reply, services, 'logout_confirm', {
      title: 'Sign out?',
      csrfToken: await csrfToken(request, reply, services, 'logout'),
      clientName: checked.client?.name,
      fields: {
        ...(params.client_id === undefined ? {} : { client_id: params.client_id }),
        ...(params.id_token_hint === undefined ? {} : { id_token_hint: params.id_token_hint }),
        ...(checked.redirect === undefined ? {} : { post_logout_redirect_uri: checked.redirect }),
        ...(checked.state === undefined ? {} : { state: checked.state }),
      },
      signedInAs: signedIn.user.username,
    });
  }

  app.get('/logout', page, (request, reply) => handle(request, reply, request.query));
  app.post('/logout', page, (request, reply) => handle(request, reply, request.body));
}
