/**
 * GET/POST /userinfo (OIDC Core §5.3) with a Bearer access token (RFC 6750): in the
 * Authorization header, or for POST in the form body (§2.2), never both. Errors are told in
 * WWW-Authenticate (§3). Any live access token of ours carrying the `openid` scope is accepted,
 * whatever API it was issued for; claims follow its scopes (OIDC Core §5.4).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../errors.js';
import { singleValued } from '../http/form.js';
import { claimsForScope } from '../oauth/claims.js';
import { isMachineToken, liveAccessTokenUser } from '../oauth/token_lookup.js';

function bearerChallenge(error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope', description?: string): string {
  const parts = ['Bearer realm="latchkey"'];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description}"`);
  if (error === 'insufficient_scope') parts.push('scope="openid"');
  return parts.join(', ');
}

function refuse(code: 'invalid_request' | 'invalid_token' | 'insufficient_scope', description: string): OAuthError {
  const status = code === 'invalid_request' ? 400 : code === 'insufficient_scope' ? 403 : 401;
  return new OAuthError(code, description, { status, headers: { 'www-authenticate': bearerChallenge(code, description) } });
}

export async function userinfoRoutes(app: FastifyInstance): Promise<void> {
  const { signer } = app.services;

  async function userinfo(request: FastifyRequest, reply: FastifyReply) {
    reply.header('cache-control', 'no-store');
    const header = request.headers.authorization;
    const fromHeader = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined;
    const body = request.method === 'POST' ? singleValued(request.body) : {};
    const fromBody = body.access_token;
    if (fromHeader !== undefined && fromBody !== undefined) throw refuse('invalid_request', 'Send the access token one way only.');
    const token = fromHeader ?? fromBody;
    if (token === undefined || token === '') {
      // RFC 6750 §3.1: a request with no credentials gets a bare challenge, no error code.
      return reply.code(401).header('www-authenticate', bearerChallenge()).send({ error: 'invalid_token', error_description: 'An access token is required.' });
    }
    const claims = await signer.verifyAccessToken(token);
    if (!claims) throw refuse('invalid_token', 'The access token is invalid or expired.');
    // A machine's token (client_credentials) has no person to describe.
    if (isMachineToken(claims)) throw refuse('invalid_token', 'The access token was not issued for a person.');
    const user = await liveAccessTokenUser(app.services, claims);
    if (!user) throw refuse('invalid_token', 'The access token has been revoked.');
    const scope = String(claims.scope ?? '');
    if (!scope.split(' ').includes('openid')) throw refuse('insufficient_scope', 'The access token lacks the openid scope.');
    return { sub: user.id, ...claimsForScope(user, scope) };
  }

  app.get('/userinfo', userinfo);
  app.post('/userinfo', userinfo);
}
