/**
 * Who may call the management API: an access token for the built-in API `{issuer}/api/v1` that
 * carries the scope the call needs. A stand-in with the final signature, to be replaced by the
 * full check (DPoP, live-token lookups, per-caller limits) when the two halves meet.
 */
import type { FastifyRequest } from 'fastify';
import { OAuthError } from '../errors.js';

export type ManagementCaller = { kind: 'person'; userId: string; username: string } | { kind: 'client'; clientId: string };

/** RFC 6750 §3: the challenge names the realm's error so a client knows to fetch a new token or ask for more scope. */
function challenge(error: string, description: string, scope?: string): string {
  return `Bearer error="${error}", error_description="${description}"${scope === undefined ? '' : `, scope="${scope}"`}`;
}

export async function authorizeManagementCall(request: FastifyRequest, scope: string): Promise<{ caller: ManagementCaller; scopes: string[] }> {
  const { config, signer, store } = request.server.services;
  const header = request.headers.authorization;
  const token = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined;
  if (token === undefined || token === '') {
    throw new OAuthError('invalid_token', 'An access token is required.', { status: 401, headers: { 'www-authenticate': 'Bearer' } });
  }
  const claims = await signer.verifyAccessToken(token);
  const audience = `${config.issuer}/api/v1`;
  const aud = claims?.aud;
  const forUs = typeof aud === 'string' ? aud === audience : Array.isArray(aud) && aud.includes(audience);
  if (!claims || !forUs || typeof claims.sub !== 'string') {
    const description = 'The access token is invalid, expired or not for this API.';
    throw new OAuthError('invalid_token', description, { status: 401, headers: { 'www-authenticate': challenge('invalid_token', description) } });
  }
  const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter((s) => s !== '') : [];
  if (!scopes.includes(scope)) {
    const description = `This call needs the scope ${scope}.`;
    throw new OAuthError('insufficient_scope', description, {
      status: 403,
      headers: { 'www-authenticate': challenge('insufficient_scope', description, scope) },
    });
  }
  const clientId = String(claims.client_id);
  if (claims.sub === clientId) return { caller: { kind: 'client', clientId }, scopes };
  const user = await store.findUserById(claims.sub);
  return { caller: { kind: 'person', userId: claims.sub, username: user?.username ?? claims.sub }, scopes };
}
