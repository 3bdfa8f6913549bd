/**
 * POST /oauth/revoke (RFC 7009). The client authenticates as at the token endpoint. A refresh
 * token revokes its whole family; an access token is revoked by its jti until it expires. Unknown
 * or already invalid tokens answer 200 (§2.2); a token issued to another client is refused and
 * left alone (§2.1).
 */
import { audit } from '../audit/audit_events.js';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { OAuthError } from '../errors.js';
import { parseFields } from '../http/form.js';
import { authenticateClient, clientAuthContext, readClientCredentials } from '../oauth/client_auth.js';
import { identifyToken, liveAccessTokenUser, liveMachineTokenClient } from '../oauth/token_lookup.js';
import { postOnly } from '../http/method_not_allowed.js';

const revocationParams = z.object({
  token: z.string({ error: 'token is required.' }).min(1, 'token is required.').max(8192, 'token is too long.'),
  token_type_hint: z.string().max(64).optional(),
  client_id: z.string().max(256).optional(),
  client_secret: z.string().max(512).optional(),
  client_assertion: z.string().max(8192).optional(),
  client_assertion_type: z.string().max(256).optional(),
});

export async function revocationRoutes(app: FastifyInstance): Promise<void> {
  postOnly(app, '/oauth/revoke');
  app.post('/oauth/revoke', async (request, reply) => {
    const { store, clock } = app.services;
    reply.header('cache-control', 'no-store');
    const params = parseFields(revocationParams, request.body);
    const client = await authenticateClient(
      clientAuthContext(request, app.services, '/oauth/revoke'),
      readClientCredentials(request.headers.authorization, params),
    );
    const found = await identifyToken(app.services, params.token, params.token_type_hint);
    if (!found) return {};
    // A token that is already dead is "invalid" (§2.2: 200), whoever presents it: nothing to learn.
    if (found.kind === 'refresh_token' && (found.record.revokedAt !== undefined || epochSeconds(clock) >= found.record.familyExpiresAt)) return {};
    if (
      found.kind === 'access_token' &&
      !(await liveAccessTokenUser(app.services, found.claims)) &&
      !(await liveMachineTokenClient(app.services, found.claims))
    )
      return {};
    const owner = found.kind === 'access_token' ? found.claims.client_id : found.record.clientId;
    if (owner !== client.clientId) throw new OAuthError('invalid_request', 'This token was not issued to this client.');
    if (found.kind === 'access_token') {
      await store.revokeAccessToken(String(found.claims.jti), Number(found.claims.exp));
    } else {
      await store.revokeRefreshFamily(found.record.familyId, epochSeconds(clock));
    }
    audit(request, 'token.revoked', { type: found.kind, clientId: client.clientId });
    return {};
  });
}
