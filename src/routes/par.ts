/**
 * POST /oauth/par — Pushed Authorization Requests (RFC 9126 §2). The client authenticates as at
 * the token endpoint (public clients name themselves with client_id); the authorization
 * parameters are validated exactly as /authorize validates them, then kept 60 s under the digest
 * of a fresh request_uri that /authorize redeems once (oauth/pushed_request.ts). Every problem is
 * a JSON error here (§2.3) — nothing is ever redirected from this endpoint.
 */
import { currentNonce, dpopContext, dpopHeader, verifyDpopProof } from '../oauth/dpop.js';
import type { FastifyInstance } from 'fastify';
import { epochSeconds } from '../clock.js';
import { OAuthError, tooManyRequests } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import { singleValued } from '../http/form.js';
import { parseAuthorizationRequest } from '../oauth/authorization_request.js';
import { refuseSeveralResources } from '../oauth/audience.js';
import { authenticateClient, clientAuthContext, readClientCredentials } from '../oauth/client_auth.js';
import { maxPushedParametersLength, newRequestUri, pushedParameters, pushedRequestLifetime } from '../oauth/pushed_request.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { postOnly } from '../http/method_not_allowed.js';

export const parPath = '/oauth/par';

export async function parRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, config, clock } = services;

  postOnly(app, parPath);
  app.post(parPath, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    // RFC 8707 §2: several resources are answered as such (invalid_target), not as a repeated parameter.
    refuseSeveralResources(request.body);
    const fields = singleValued(request.body);
    const credentials = readClientCredentials(request.headers.authorization, {
      client_id: fields.client_id,
      client_secret: fields.client_secret,
      client_assertion: fields.client_assertion,
      client_assertion_type: fields.client_assertion_type,
    });
    // RFC 9449 §10.1: a DPoP proof sent here binds the code to its key (as `dpop_jkt` would). It
    // is checked first, like at the token endpoint, so a nonce retry spends no client assertion.
    const proof = dpopHeader(request.headers);
    let proofJkt: string | undefined;
    if (proof !== undefined) {
      const dpop = dpopContext(services);
      reply.header('dpop-nonce', currentNonce(dpop));
      proofJkt = await verifyDpopProof(dpop, { proof, method: 'POST', url: `${config.issuer}${parPath}`, requireNonce: true });
      if (fields.dpop_jkt !== undefined && fields.dpop_jkt !== proofJkt)
        throw new OAuthError('invalid_request', 'dpop_jkt does not match the key of the DPoP proof.');
    }
    const client = await authenticateClient(clientAuthContext(request, services, parPath), credentials);
    // Anyone can push as a public client: its pushes count per client and address like device
    // authorization requests do (each row lives a minute at most). A confidential client is
    // accountable for its own and may push for all its users from one address.
    if (credentials.method === 'none') {
      const limited = await services.rateLimits.deviceAuthorization.hit(`par|${client.clientId}|${rateLimitKey(request.ip)}`);
      if (limited.limited) throw tooManyRequests(limited.retryAfter, 'Too many pushed authorization requests. Try again later.');
    }
    // RFC 9126 §2.1: a pushed request cannot itself point to another one.
    if (fields.request_uri !== undefined) throw new OAuthError('invalid_request', 'request_uri cannot be pushed.');

    const parameters = { ...pushedParameters(fields, client.clientId), ...(proofJkt === undefined ? {} : { dpop_jkt: proofJkt }) };
    const stored = JSON.stringify(parameters);
    if (stored.length > maxPushedParametersLength) {
      throw new OAuthError('invalid_request', 'The pushed authorization request is too large.', { detail: `${stored.length} characters of parameters` });
    }
    const parsed = await parseAuthorizationRequest(store, config, parameters, {
      checkIdTokenHint: (hint, clientId) => services.signer.idTokenHintSubject(hint, clientId),
      requestObjects: { issuer: config.issuer, clock, secretBox: services.secretBox, outbound: services.outbound },
    });
    // Nothing is answered through a redirect here: a bad redirect_uri is just a bad request (§2.3).
    if (parsed.kind === 'invalid_page') throw new OAuthError('invalid_request', parsed.message);
    if (parsed.kind === 'invalid_redirect') throw parsed.error;

    const now = epochSeconds(clock);
    const { requestUri, requestHash } = newRequestUri();
    await store.createPushedRequest({
      requestHash,
      clientId: client.clientId,
      parameters,
      createdAt: now,
      expiresAt: now + pushedRequestLifetime,
      usedAt: undefined,
    });
    audit(request, 'authorization.pushed', { clientId: client.clientId });
    return reply.code(201).send({ request_uri: requestUri, expires_in: pushedRequestLifetime });
  });
}
