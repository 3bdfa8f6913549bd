/**
 * POST /oauth/token (RFC 6749 §3.2). Owns every step all grants share — no-store, the grant
 * lookup, client authentication, "may this client use this grant" — and only then hands the
 * grant's own parameters to its handler. There is no switch on grant_type.
 */
import type { FastifyInstance } from 'fastify';
import { OAuthError } from '../errors.js';
import { grantHandlers } from '../grants/index.js';
import { authenticateClient, clientAuthContext, readClientCredentials, requireGrantType } from '../oauth/client_auth.js';
import { parseFields, singleValued } from '../http/form.js';
import { refuseSeveralResources } from '../oauth/audience.js';
import { postOnly } from '../http/method_not_allowed.js';
import { currentNonce, dpopContext, dpopHeader, verifyDpopProof } from '../oauth/dpop.js';

export async function tokenRoutes(app: FastifyInstance): Promise<void> {
  postOnly(app, '/oauth/token');
  app.post('/oauth/token', async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    // RFC 8707 §2: several resources are answered as such (invalid_target), not as a repeated parameter.
    refuseSeveralResources(request.body);
    const fields = singleValued(request.body);
    const grantType = fields.grant_type;
    if (grantType === undefined || grantType === '') throw new OAuthError('invalid_request', 'grant_type is required.');
    const grant = grantHandlers.get(grantType);
    if (!grant) throw new OAuthError('unsupported_grant_type', 'This grant_type is not supported.');

    // RFC 9449 §5: a DPoP proof binds what is issued to the client's key. Checked before the
    // client's own authentication, so a retry with the server's nonce spends no client assertion.
    const proof = dpopHeader(request.headers);
    let dpopJkt: string | undefined;
    if (proof !== undefined) {
      const dpop = dpopContext(app.services);
      reply.header('dpop-nonce', currentNonce(dpop));
      dpopJkt = await verifyDpopProof(dpop, { proof, method: 'POST', url: `${app.services.config.issuer}/oauth/token`, requireNonce: true });
    }

    const credentials = readClientCredentials(request.headers.authorization, {
      client_id: fields.client_id,
      client_secret: fields.client_secret,
      client_assertion: fields.client_assertion,
      client_assertion_type: fields.client_assertion_type,
    });
    const client = await authenticateClient(clientAuthContext(request, app.services, '/oauth/token'), credentials);
    requireGrantType(client, grant.clientGrantType);
    const params = parseFields(grant.params, fields);
    const tokens = await grant.handle({ services: app.services, client, ip: request.ip, log: request.log, dpopJkt }, params);
    app.services.metrics.tokensIssued.inc({ grant_type: grant.clientGrantType });
    return tokens;
  });
}
