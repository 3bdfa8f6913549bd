/**
 * POST /oauth/introspect (RFC 7662), for confidential clients (the APIs that check tokens).
 * Anything not a live token of ours — unknown, expired, revoked, rotated, of a disabled user —
 * is `{"active": false}` and nothing more (§2.2). A client learns about a token only if it is the
 * token's own client or one registered for the token's audience (`apis add
 * --introspection-client`): anyone else gets `{"active": false}` too, so a client cannot read
 * another's tokens (§4). Refresh tokens are introspectable only by the client they were issued to.
 */
import type { FastifyInstance } from 'fastify';
import type { JWTPayload } from 'jose';
import { z } from 'zod';
import { epochSeconds } from '../clock.js';
import { parseFields } from '../http/form.js';
import { authenticateClient, clientAuthContext, invalidClient, readClientCredentials } from '../oauth/client_auth.js';
import { identifyToken, liveAccessTokenUser, liveMachineTokenClient } from '../oauth/token_lookup.js';
import { isConfidential } from '../oauth/client_type.js';
import { postOnly } from '../http/method_not_allowed.js';

const introspectionParams = z.object({
  token: z.string({ error: 'token is required.' }).min(1, 'token is required.').max(8192, 'token is too long.'),
  token_type_hint: z.string().max(64).optional(),
  client_id: z.string().max(256).optional(),
  client_secret: z.string().max(512).optional(),
  client_assertion: z.string().max(8192).optional(),
  client_assertion_type: z.string().max(256).optional(),
});

export async function introspectionRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, config } = app.services;

  /** The token's own client, or a client the token's audience (an API) names as its introspector. */
  async function mayIntrospect(clientId: string, claims: JWTPayload): Promise<boolean> {
    if (claims.client_id === clientId) return true;
    const audiences = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : [];
    for (const audience of audiences) {
      const api = await store.findApi(audience);
      if (api?.introspectionClients.includes(clientId)) return true;
    }
    return false;
  }

  postOnly(app, '/oauth/introspect');
  app.post('/oauth/introspect', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const params = parseFields(introspectionParams, request.body);
    const client = await authenticateClient(
      clientAuthContext(request, app.services, '/oauth/introspect'),
      readClientCredentials(request.headers.authorization, params),
    );
    if (!isConfidential(client)) throw invalidClient(`public client ${client.clientId} tried to introspect`);
    const inactive = { active: false };
    const found = await identifyToken(app.services, params.token, params.token_type_hint);
    if (!found) return inactive;
    const now = epochSeconds(clock);

    if (found.kind === 'access_token') {
      const c = found.claims;
      if (!(await mayIntrospect(client.clientId, c))) return inactive;
      const user = await liveAccessTokenUser(app.services, c);
      // A machine's token (client_credentials) has no person behind it, so no username.
      if (!user && !(await liveMachineTokenClient(app.services, c))) return inactive;
      return {
        active: true,
        scope: c.scope,
        client_id: c.client_id,
        ...(user ? { username: user.username } : {}),
        ...(Array.isArray(c.roles) ? { roles: c.roles } : {}),
        // RFC 9449 §6.2: a bound token says so, and to which key.
        token_type: c.cnf === undefined ? 'Bearer' : 'DPoP',
        ...(c.cnf === undefined ? {} : { cnf: c.cnf }),
        exp: c.exp,
        iat: c.iat,
        sub: c.sub,
        aud: c.aud,
        iss: config.issuer,
        jti: c.jti,
      };
    }
    const r = found.record;
    if (r.clientId !== client.clientId || r.revokedAt !== undefined || r.rotatedAt !== undefined || now >= r.expiresAt) return inactive;
    const user = await store.findUserById(r.userId);
    if (!user || user.disabled) return inactive;
    return {
      active: true,
      scope: r.scope,
      client_id: r.clientId,
      username: user.username,
      token_type: 'refresh_token',
      exp: r.expiresAt,
      iat: r.createdAt,
      sub: r.userId,
      aud: r.audience,
      iss: config.issuer,
    };
  });
}
