/**
 * The Authorization Code flow in the browser (RFC 6749 §4.1, OIDC Core §3.1.2, RFC 8252).
 * GET /authorize validates the request and keeps it as an interaction bound to this browser;
 * the person then signs in if needed (prompt=login and max_age ask for a fresh sign-in), gives
 * consent unless it was given before or the client is first-party, and for loopback and
 * private-use redirects confirms with one click unless the consent page was shown (RFC 8252 §8.6),
 * since any program on the machine could be listening there. prompt=none answers login_required
 * or consent_required instead of showing anything. Success redirects with code, state and iss
 * (RFC 9207). The pending request is never stored: it travels sealed (oauth/interaction.ts), so a
 * flood of anonymous requests costs no disk. A request pushed to /oauth/par first (RFC 9126)
 * arrives as a request_uri, redeemed once; clients registered with --require-par need one.
 */
import { audit } from '../audit/audit_events.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import { audienceName } from '../oauth/audience.js';
import { parseAuthorizationRequest } from '../oauth/authorization_request.js';
import { isPushedRequestUri, redeemPushedRequest } from '../oauth/pushed_request.js';
import { newInteraction, sealInteraction, type Interaction } from '../oauth/interaction.js';
import { formActionSource, isLoopbackRedirect, isPrivateUseRedirect, redirectUriAllowed, withResponseParams } from '../oauth/redirect.js';
import { describeScopes } from '../oauth/scope.js';
import { claimScopes } from '../oauth/claims.js';
import { formPostPolicy, formPostScript } from '../oauth/form_post.js';
import { nothingPermitted, permittedScope } from '../oauth/permissions.js';
import { browserBinding, csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage } from '../http/pages.js';
import { allowFormActionTo } from '../http/security_headers.js';
import { continuePath, openSealedInteraction } from '../http/sealed_interaction.js';
import { currentSession, type SignedIn } from '../http/session.js';
import { asksForMfa } from '../mfa/amr.js';
import { headerText } from '../http/header_text.js';
import { pageLanguage, setPageLanguage } from '../i18n/page_language.js';
import { translator } from '../i18n/translate.js';
import { secondFactorNeed, stepUpPath } from '../mfa/policy.js';

/** RFC 6749 §4.1.2 recommends at most 10 minutes; one is plenty for a client to redeem. */
export const authorizationCodeLifetime = 60;

/** The longest query a POSTed request is moved to (proxies commonly allow 8 KiB request lines). */
const maxRedirectedQueryLength = 7_000;

/** A sealed interaction is at most this long (the request's own parameters are capped too). */
const maxSealedLength = 24_100;
const continueQuery = z.object({ interaction: z.string().max(maxSealedLength).default('') });
const decisionForm = z.object({
  interaction: z.string().max(maxSealedLength).default(''),
  decision: z.string().max(16).optional(),
  csrf_token: z.string().max(256).optional(),
});

/**
 * What the person is asked to allow: the request's scopes, and the scopes of the claims it asks
 * for by name (OIDC `claims`), since releasing a claim is releasing part of its scope.
 */
function consentScopes(scope: string, r: Interaction['request']): string[] {
  return [...new Set([...scope.split(' ').filter((s) => s !== ''), ...claimScopes(r.claims)])];
}

export async function authorizeRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { config, store, clock } = services;
  const page = { config: { page: true } };

  const expiredPage = {
    heading: 'This sign-in has expired',
    message: 'Go back to the application and start again.',
  };

  /**
   * The answer to the client, with iss (RFC 9207): in the redirect's query, or with
   * response_mode=form_post as a page whose form the browser posts to the redirect URI.
   */
  async function redirectWith(
    reply: FastifyReply,
    redirectUri: string,
    params: Record<string, string | undefined>,
    status: 302 | 303,
    responseMode?: 'form_post',
  ) {
    const answer: Record<string, string | undefined> = { ...params, iss: config.issuer };
    if (responseMode !== 'form_post') return reply.redirect(withResponseParams(redirectUri, answer), status);
    const fields = Object.entries(answer)
      .filter((e): e is [string, string] => e[1] !== undefined)
      .map(([name, value]) => ({ name, value }));
    const html = await reply.viewAsync('form_post.eta', { action: redirectUri, fields, script: formPostScript, ...translator(pageLanguage(reply.request)) });
    return reply
      .code(200)
      .header('content-security-policy', formPostPolicy(formActionSource(redirectUri) ?? "'none'"))
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(html);
  }

  /** A final answer to the client. */
  function redirectError(reply: FastifyReply, interaction: Interaction, error: OAuthError, status: 302 | 303) {
    return redirectWith(
      reply,
      interaction.request.redirectUri,
      { error: error.code, error_description: error.description, state: interaction.request.state },
      status,
      interaction.request.responseMode,
    );
  }

  /**
   * Whether the sign-in is good enough for this request: prompt=login needs a sign-in done for
   * this very request, max_age one recent enough. Checked again when a decision is posted.
   */
  function signInState(interaction: Interaction, signedIn: SignedIn | undefined) {
    const signedInHere = signedIn !== undefined && signedIn.session.interactionId === interaction.id;
    // A valid id_token_hint names the person the client expects; someone else signed in must sign
    // in again (unless they just did, for this very request: then it is their answer).
    const expectedPerson = interaction.expectedSubject === undefined || signedIn?.user.id === interaction.expectedSubject || signedInHere;
    const fresh =
      signedIn !== undefined &&
      expectedPerson &&
      (!interaction.request.prompt.includes('login') || signedInHere) &&
      (interaction.maxAge === undefined || epochSeconds(clock) - signedIn.session.authTime <= interaction.maxAge);
    // OIDC Core §5.5.1: a sub asked for with a value admits no one else, not even someone who
    // signed in for this very request.
    const wrongPerson = signedIn !== undefined && interaction.requiredSubject !== undefined && signedIn.user.id !== interaction.requiredSubject;
    return { signedInHere, fresh, wrongPerson };
  }

  async function issueCode(request: FastifyRequest, reply: FastifyReply, interaction: Interaction, signedIn: SignedIn, status: 302 | 303) {
    const now = epochSeconds(clock);
    const code = randomSecret(secretPrefix.authorizationCode);
    const r = interaction.request;
    await store.createAuthorizationCode({
      codeHash: sha256(code),
      clientId: r.clientId,
      userId: signedIn.user.id,
      redirectUri: r.redirectUri,
      scope: r.scope,
      audience: r.audience,
      nonce: r.nonce,
      codeChallenge: r.codeChallenge,
      authTime: signedIn.session.authTime,
      amr: signedIn.session.amr,
      createdAt: now,
      expiresAt: now + authorizationCodeLifetime,
      consumedAt: undefined,
      accessTokenJti: undefined,
      refreshFamilyId: undefined,
      approvedIp: request.ip,
      approvedUserAgent: headerText(request.headers['user-agent']),
      sessionId: signedIn.session.id,
      dpopJkt: r.dpopJkt,
      claims: r.claims,
    });
    audit(request, 'authorization.code_issued', { clientId: r.clientId, userId: signedIn.user.id });
    return redirectWith(reply, r.redirectUri, { code, state: r.state }, status, r.responseMode);
  }

  /** LATCHKEY_MFA, the person's own factors and the client's acr_values: is this session enough? */
  async function secondFactorDone(signedIn: SignedIn, r: Interaction['request']): Promise<boolean> {
    return (await secondFactorNeed(config, store, signedIn.session, asksForMfa(r.acrValues))) === 'satisfied';
  }

  /** Decides the next step of an interaction: sign in, consent, loopback confirmation, or the code. */
  async function proceed(request: FastifyRequest, reply: FastifyReply, interaction: Interaction, sealed: string, status: 302 | 303) {
    const r = interaction.request;
    const signedIn = await currentSession(request, services);
    const { fresh, wrongPerson } = signInState(interaction, signedIn);
    if (!signedIn || !fresh) {
      if (r.prompt.includes('none')) return redirectError(reply, interaction, new OAuthError('login_required', 'The user must sign in.'), status);
      return reply.redirect(`/login?return_to=${encodeURIComponent(continuePath(sealed))}&fresh=${signedIn ? '1' : '0'}`, 303);
    }
    if (wrongPerson) {
      audit(request, 'authorization.refused', {
        clientId: r.clientId,
        userId: signedIn.user.id,
        reason: 'signed in as another person than the claims parameter requires',
      });
      return redirectError(reply, interaction, new OAuthError('access_denied', 'The person who signed in is not the one the application asked for.'), status);
    }
    if (!(await secondFactorDone(signedIn, r))) {
      if (r.prompt.includes('none'))
        return redirectError(reply, interaction, new OAuthError('interaction_required', 'The user must confirm the sign-in with a second factor.'), status);
      return reply.redirect(stepUpPath(continuePath(sealed)), 303);
    }
    const client = await store.findClient(r.clientId);
    if (!client)
      return renderErrorPage(request, reply, services, { heading: 'Unknown application', message: 'This application is no longer registered.' }, 400);
    if (client.disabled)
      return renderErrorPage(request, reply, services, { heading: 'Application disabled', message: 'The administrator has disabled this application.' }, 403);
    // The sealed request may be up to ten minutes old: its redirect must still be registered.
    if (!redirectUriAllowed(r.redirectUri, client.redirectUris)) {
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'This sign-in link is not valid', message: 'The address this application asked to return to is not registered for it.' },
        400,
      );
    }

    const consent = await store.findConsent(signedIn.user.id, client.clientId, r.audience);
    const granted = new Set(consent?.scope.split(' ') ?? []);
    // The person is asked only for what their roles let them give.
    const scope = await permittedScope(store, signedIn.user, r.audience, r.scope);
    // Only API scopes were asked for and the roles allow none: nothing to consent to, no code.
    if (scope === '') return redirectError(reply, interaction, new OAuthError('access_denied', nothingPermitted), status);
    const asked = consentScopes(scope, r);
    const consentNeeded = r.prompt.includes('consent') || (!client.firstParty && !asked.every((s) => granted.has(s)));
    // Any program on the machine can listen on a loopback port or claim a private-use scheme, so
    // such a redirect needs the person to have seen a page naming the application and said yes:
    // the consent page, or this one-click confirmation. A sign-in page does not count — prompt=login
    // is the client's to choose, and must not remove an anti-phishing step (RFC 8252 §8.6).
    const interceptable = isLoopbackRedirect(r.redirectUri) || isPrivateUseRedirect(r.redirectUri);
    const confirmNeeded = !consentNeeded && interceptable;

    if (consentNeeded || confirmNeeded) {
      if (r.prompt.includes('none')) {
        return redirectError(reply, interaction, new OAuthError('consent_required', 'The user must approve this application.'), status);
      }
      allowFormActionTo(reply, formActionSource(r.redirectUri));
      return renderPage(request, reply, services, 'consent', {
        title: consentNeeded ? 'Allow access' : 'Continue',
        mode: consentNeeded ? 'consent' : 'confirm',
        clientName: client.name,
        access: describeScopes(asked.join(' '), translator(pageLanguage(request)).t),
        audienceName: await audienceName(store, config, r.audience),
        redirectHost: new URL(r.redirectUri).host || r.redirectUri,
        interaction: sealed,
        csrfToken: await csrfToken(request, reply, services, 'authorize_decision', sealed),
      });
    }
    return issueCode(request, reply, interaction, signedIn, status);
  }

  /** An authorization request's parameters, from the query (GET) or the form (POST), to its first answer. */
  async function startAuthorization(request: FastifyRequest, reply: FastifyReply, received: unknown) {
    // A request_uri from POST /oauth/par (RFC 9126 §4) is redeemed once, and then its pushed
    // parameters are the whole request: nothing else in the query counts but the matching client_id.
    const query = (received && typeof received === 'object' ? received : {}) as Record<string, unknown>;
    // Even a page saying the request is not valid is in the language the client asked for.
    setPageLanguage(request, typeof query.ui_locales === 'string' ? query.ui_locales : undefined);
    const requestUri = query.request_uri;
    const pushed = isPushedRequestUri(requestUri);
    let parameters: unknown = query;
    if (pushed) {
      const redeemed = await redeemPushedRequest(store, query, requestUri, epochSeconds(clock));
      if (redeemed.kind === 'refused') {
        audit(request, 'authorization.refused', {
          reason: redeemed.reason,
          ...(typeof query.client_id === 'string' ? { clientId: query.client_id.slice(0, 256) } : {}),
        });
        return renderErrorPage(request, reply, services, { heading: 'This sign-in link is not valid', message: redeemed.message }, 400);
      }
      parameters = redeemed.parameters;
    }
    const parsed = await parseAuthorizationRequest(store, config, parameters, {
      checkIdTokenHint: (hint, clientId) => services.signer.idTokenHintSubject(hint, clientId),
      requestObjects: { issuer: config.issuer, clock, secretBox: services.secretBox, outbound: services.outbound },
    });
    if (parsed.kind === 'invalid_page') {
      audit(request, 'authorization.refused', { reason: parsed.message });
      return renderErrorPage(request, reply, services, { heading: 'This sign-in link is not valid', message: parsed.message }, 400);
    }
    if (parsed.kind === 'invalid_redirect') {
      audit(request, 'authorization.refused', { error: parsed.error.code });
      return redirectWith(
        reply,
        parsed.redirectUri,
        { error: parsed.error.code, error_description: parsed.error.description, state: parsed.state },
        302,
        parsed.responseMode,
      );
    }
    if (parsed.client.requirePar && !pushed) {
      // RFC 9126 §5: the client and its redirect_uri are verified, so the refusal goes back to it.
      const error = new OAuthError('invalid_request', 'This client must use pushed authorization requests.');
      audit(request, 'authorization.refused', { error: error.code, clientId: parsed.client.clientId, reason: 'authorization request not pushed' });
      const r = parsed.request;
      return redirectWith(reply, r.redirectUri, { error: error.code, error_description: error.description, state: r.state }, 302, r.responseMode);
    }
    // The validated request's, which may come from a request object or a pushed request.
    setPageLanguage(request, parsed.request.uiLocales);
    const interaction = newInteraction(parsed.request, {
      maxAge: parsed.maxAge,
      expectedSubject: parsed.expectedSubject,
      requiredSubject: parsed.requiredSubject,
      now: epochSeconds(clock),
    });
    const sealed = sealInteraction(services.interactionKey, browserBinding(request, reply, config), interaction);
    return proceed(request, reply, interaction, sealed, 302);
  }

  app.get('/authorize', page, async (request, reply) => startAuthorization(request, reply, request.query));

  /**
   * OIDC Core §3.1.2.1: the authorization endpoint takes POST too, the parameters form-encoded.
   * A cross-site POST carries none of this server's SameSite=Lax cookies, so the person would look
   * signed out (and prompt=none would fail): the request moves to a GET of itself, a top-level
   * navigation that carries them. A request too long for a URL is handled where it is.
   */
  app.post('/authorize', page, async (request, reply) => {
    const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(body)) {
      for (const item of Array.isArray(value) ? value : [value]) search.append(name, String(item));
    }
    const query = search.toString();
    if (query.length <= maxRedirectedQueryLength) return reply.redirect(`/authorize?${query}`, 303);
    return startAuthorization(request, reply, body);
  });

  app.get('/authorize/continue', page, async (request, reply) => {
    const { interaction: sealed } = parseFields(continueQuery, request.query);
    const interaction = openSealedInteraction(request, reply, services, sealed);
    if (!interaction) return renderErrorPage(request, reply, services, expiredPage, 400);
    return proceed(request, reply, interaction, sealed, 302);
  });

  app.post('/authorize/decision', page, async (request, reply) => {
    const form = parseFields(decisionForm, request.body);
    // The token is bound to the one request its page was shown for.
    if (!(await csrfTokenValid(request, services, 'authorize_decision', form.csrf_token, form.interaction))) {
      return renderErrorPage(request, reply, services, formExpiredPage, 403);
    }
    const interaction = openSealedInteraction(request, reply, services, form.interaction);
    if (!interaction) return renderErrorPage(request, reply, services, expiredPage, 400);
    const signedIn = await currentSession(request, services);
    const state = signInState(interaction, signedIn);
    if (!signedIn || !state.fresh || state.wrongPerson || !(await secondFactorDone(signedIn, interaction.request))) {
      return proceed(request, reply, interaction, form.interaction, 303);
    }
    if (form.decision !== 'allow' && form.decision !== 'deny') {
      return renderErrorPage(request, reply, services, { heading: 'Choose Allow or Deny', message: 'The answer was missing. Go back and choose again.' }, 400);
    }
    if (form.decision === 'deny') {
      audit(request, 'authorization.denied', { clientId: interaction.request.clientId, userId: signedIn.user.id });
      return redirectError(reply, interaction, new OAuthError('access_denied', 'The user denied the request.'), 303);
    }
    const r = interaction.request;
    const client = await store.findClient(r.clientId);
    if (!client || client.disabled)
      return renderErrorPage(
        request,
        reply,
        services,
        { heading: 'Application unavailable', message: 'This application is no longer registered or has been disabled.' },
        400,
      );
    if (!client.firstParty) {
      const previous = await store.findConsent(signedIn.user.id, r.clientId, r.audience);
      // What the page showed: the request narrowed to what the person's roles allow.
      const shown = consentScopes(await permittedScope(store, signedIn.user, r.audience, r.scope), r);
      const scope = [...new Set([...(previous?.scope.split(' ') ?? []), ...shown])].join(' ');
      await store.saveConsent({ userId: signedIn.user.id, clientId: r.clientId, audience: r.audience, scope, grantedAt: epochSeconds(clock) });
      audit(request, 'consent.granted', { clientId: r.clientId, userId: signedIn.user.id, scope: shown.join(' ') });
    }
    return issueCode(request, reply, interaction, signedIn, 303);
  });
}
