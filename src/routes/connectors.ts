/**
 * Signing in with an upstream identity provider: the sign-in page's connector buttons
 * post here (CSRF-protected like every form); the person is sent upstream with state, nonce and
 * PKCE, and comes back to `/connectors/<id>/callback`, where the answer is checked and the person
 * mapped to a local user (connectors/accounts.ts). Whatever goes wrong upstream — denied, an error,
 * a wrong or replayed state, a wrong issuer, no answer — ends on a clear page, never a 500, and
 * nothing half-created.
 */
import { pageLanguage } from '../i18n/page_language.js';
import { translator } from '../i18n/translate.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import * as oidc from 'openid-client';
import { epochSeconds } from '../clock.js';
import { errorMessage } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { afterFirstFactor } from '../mfa/sign_in_steps.js';
import { userForUpstream } from '../connectors/accounts.js';
import { connectorRedirectUri, typedConnector, type TypedConnector } from '../connectors/connector_config.js';
import { githubAuthorizationUrl, githubCallback } from '../connectors/github_upstream.js';
import { oidcAuthorizationUrl, oidcCallback } from '../connectors/oidc_upstream.js';
import { canProveFreshSignIn, connectorSecret, freshSignInAsked } from '../connectors/runtime.js';
import { saveUpstreamState, takeUpstreamState, upstreamStateLifetime } from '../connectors/upstream_state.js';
import { misconfiguredMessageWithReference, UpstreamError, type UpstreamProfile } from '../connectors/upstream_profile.js';
import { maxReturnToLength, openSealedInteraction, sealedInteractionOf } from '../http/sealed_interaction.js';

const startForm = z.object({
  connector: z.string().max(64).default(''),
  csrf_token: z.string().max(256).optional(),
  return_to: z.string().max(maxReturnToLength).optional(),
});

const callbackParams = z.object({ id: z.string().max(64) });

export async function connectorRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, clock, metrics } = services;
  const page = { config: { page: true } };

  // Texts naming the connector are put into the page's language here; renderPage does the rest.
  const pageText = (request: FastifyRequest) => translator(pageLanguage(request)).t;
  const failurePage = (request: FastifyRequest, reply: FastifyReply, name: string, message: string, returnTo: string, status: number) =>
    renderErrorPage(
      request,
      reply,
      services,
      {
        heading: pageText(request)('Signing in with {name} did not work', { name }),
        message,
        link: { href: `/login?return_to=${encodeURIComponent(returnTo)}`, label: 'Back to sign-in' },
      },
      status,
    );

  const oidcUpstream = (c: Extract<TypedConnector, { type: 'oidc' }>) => ({
    connectorId: c.record.id,
    settings: c.config,
    secret: connectorSecret(services, c.record),
    timeoutSeconds: config.upstreamTimeout,
  });
  const githubUpstream = (c: Extract<TypedConnector, { type: 'github' }>) => ({
    settings: c.config,
    secret: connectorSecret(services, c.record) ?? '',
    timeoutSeconds: config.upstreamTimeout,
  });

  async function webConnector(id: string): Promise<Exclude<TypedConnector, { type: 'ldap' }> | undefined> {
    const record = await store.findConnector(id);
    const typed = record && typedConnector(record);
    return typed && typed.type !== 'ldap' ? typed : undefined;
  }

  app.post('/login/connector', page, async (request, reply) => {
    const form = parseFields(startForm, request.body);
    const returnTo = safeReturnTo(form.return_to, '/activate', maxReturnToLength);
    if (!(await csrfTokenValid(request, services, 'login', form.csrf_token))) {
      return renderErrorPage(
        request,
        reply,
        services,
        { ...formExpiredPage, link: { href: `/login?return_to=${encodeURIComponent(returnTo)}`, label: 'Sign in' } },
        403,
      );
    }
    const connector = await webConnector(form.connector);
    if (!connector) return failurePage(request, reply, 'that service', 'It is not one this server signs in with.', returnTo, 400);
    const { record } = connector;
    const now = epochSeconds(clock);
    const fresh = freshSignInAsked(openSealedInteraction(request, reply, services, sealedInteractionOf(returnTo)));
    if (fresh && !canProveFreshSignIn(connector)) {
      // OIDC Core §3.1.2.1: a provider that cannot re-authenticate the person must not pretend to.
      metrics.upstreamSignIns.inc({ connector: record.id, outcome: 'fresh_unsupported' });
      audit(request, 'upstream.signin_failure', { connectorId: record.id, reason: 'fresh_unsupported' });
      return failurePage(
        request,
        reply,
        record.name,
        pageText(request)('This application asks for a fresh sign-in, which {name} cannot confirm. Sign in another way.', { name: record.name }),
        returnTo,
        400,
      );
    }
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const codeChallenge = await oidc.calculatePKCECodeChallenge(codeVerifier);
    const redirectUri = connectorRedirectUri(config.issuer, record.id);
    let url: URL;
    try {
      url =
        connector.type === 'oidc'
          ? await oidcAuthorizationUrl(oidcUpstream(connector), { redirectUri, state, nonce, codeChallenge, fresh })
          : githubAuthorizationUrl(githubUpstream(connector), { redirectUri, state, codeChallenge });
    } catch (err) {
      return fail(request, reply, record.id, record.name, err, returnTo);
    }
    const saved = saveUpstreamState(reply, config, services.secretBox, {
      connectorId: record.id,
      state,
      nonce,
      codeVerifier,
      returnTo,
      expiresAt: now + upstreamStateLifetime,
      freshSince: fresh && now - (fresh.promptLogin ? 0 : (fresh.maxAge ?? 0)),
    });
    if (!saved) return failurePage(request, reply, record.name, 'This sign-in request is too long to continue through another service.', returnTo, 400);
    audit(request, 'upstream.signin_started', { connectorId: record.id });
    // Not a redirect: browsers check CSP form-action against the redirects that follow a form
    // post, and the sign-in page would have to list every upstream (and wherever an upstream's
    // authorization endpoint moves to). A page of ours that moves on is a new navigation.
    return renderPage(request, reply, services, 'continue', {
      title: pageText(request)('Continuing to {name}', { name: record.name }),
      name: record.name,
      url: url.href,
      refreshTo: url.href,
    });
  });

  app.get('/connectors/:id/callback', page, async (request, reply) => {
    const { id } = parseFields(callbackParams, request.params);
    const connector = await webConnector(id);
    if (!connector) return failurePage(request, reply, 'that service', 'It is not one this server signs in with.', '/activate', 400);
    const { record } = connector;
    const query = new URL(request.url, 'http://callback.invalid').search;
    const currentUrl = new URL(`${connectorRedirectUri(config.issuer, record.id)}${query}`);
    const now = epochSeconds(clock);
    const pending = takeUpstreamState(request, reply, config, services.secretBox, record.id, currentUrl.searchParams.get('state') ?? undefined, now);
    if (!pending) {
      metrics.upstreamSignIns.inc({ connector: record.id, outcome: 'state' });
      audit(request, 'upstream.signin_failure', { connectorId: record.id, reason: 'state' });
      return failurePage(request, reply, record.name, 'This sign-in has expired or was not started in this browser. Start again.', '/activate', 400);
    }
    let profile: UpstreamProfile;
    try {
      profile =
        connector.type === 'oidc'
          ? await oidcCallback(oidcUpstream(connector), currentUrl, pending)
          : await githubCallback(githubUpstream(connector), currentUrl, pending);
    } catch (err) {
      return fail(request, reply, record.id, record.name, err, pending.returnTo);
    }
    const trustEmail = connector.type === 'oidc' ? connector.config.trustEmail : true;
    let user;
    try {
      const outcome = await userForUpstream(
        store,
        { connectorId: record.id, emailTrusted: trustEmail, linkByEmail: connector.type === 'oidc' && trustEmail },
        profile,
        now,
      );
      user = outcome.user;
      if (outcome.created) audit(request, 'upstream.user_created', { connectorId: record.id, userId: user.id });
      if (outcome.linked) audit(request, 'upstream.identity_linked', { connectorId: record.id, userId: user.id });
      if (outcome.refused.length > 0) audit(request, 'upstream.attributes_refused', { connectorId: record.id, userId: user.id, attributes: outcome.refused });
      const { gained, lost } = outcome.groupRoles;
      if (gained.length > 0) audit(request, 'upstream.group_roles_granted', { connectorId: record.id, userId: user.id, roles: gained });
      if (lost.length > 0) audit(request, 'upstream.group_roles_revoked', { connectorId: record.id, userId: user.id, roles: lost });
    } catch (err) {
      return fail(request, reply, record.id, record.name, err, pending.returnTo);
    }
    // The upstream's auth_time, where it says; within the clock skew allowed when a fresh sign-in
    // was asked, the request's own time (else the skew would send the person round again).
    const signedInAt = profile.authTime === undefined || pending.freshSince === undefined ? profile.authTime : Math.max(profile.authTime, pending.freshSince);
    const next = await afterFirstFactor(request, reply, services, user, { amr: ['fed'], returnTo: pending.returnTo, signedInAt });
    if (next.kind === 'ended') {
      return fail(
        request,
        reply,
        record.id,
        record.name,
        new UpstreamError('Your sign-ins were ended a moment ago. Sign in again.', 'error'),
        pending.returnTo,
      );
    }
    metrics.upstreamSignIns.inc({ connector: record.id, outcome: 'success' });
    audit(request, 'upstream.signin_success', { connectorId: record.id, userId: user.id });
    if (next.kind === 'second_factor') {
      audit(request, 'signin.first_step', { userId: user.id, connectorId: record.id });
      return reply.redirect(next.location, 303);
    }
    audit(request, 'signin.success', { userId: user.id, connectorId: record.id });
    return reply.redirect(pending.returnTo, 303);
  });

  function fail(request: FastifyRequest, reply: FastifyReply, connectorId: string, name: string, err: unknown, returnTo: string) {
    const upstream =
      err instanceof UpstreamError ? err : new UpstreamError('Something went wrong while signing you in. Try again in a moment.', 'error', errorMessage(err));
    metrics.upstreamSignIns.inc({ connector: connectorId, outcome: upstream.reason });
    const misconfigured = upstream.reason === 'misconfigured';
    audit(request, 'upstream.signin_failure', {
      connectorId,
      reason: upstream.reason,
      detail: upstream.detail.slice(0, 500),
      ...(misconfigured ? { reference: request.id } : {}),
    });
    const status = upstream.reason === 'unreachable' || misconfigured ? 502 : upstream.reason === 'not_allowed' || upstream.reason === 'disabled' ? 403 : 400;
    // Only an administrator can mend a misconfiguration: the page gives the reference the log line carries.
    const message = misconfigured ? pageText(request)(misconfiguredMessageWithReference, { reference: request.id }) : upstream.publicMessage;
    return failurePage(request, reply, name, message, returnTo, status);
  }
}
