/**
 * GET/POST /userinfo (OIDC Core §5.3) with a Bearer access token (RFC 6750): in the
 * Authorization header, or for POST in the form body (§2.2), never both. Errors are told in
 * WWW-Authenticate (§3). Any live access token of ours carrying the `openid` scope is accepted,
 * whatever API it was issued for; claims follow its scopes (OIDC Core §5.4).
 *
 * A DPoP-bound token (RFC 9449 §7) must come as `Authorization: DPoP <token>` with a proof by
 * its key for this request (htm, htu, ath); presented as Bearer — a stolen copy — it is refused.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../errors.js';
import { singleValued } from '../http/form.js';
import { userinfoClaims } from '../oauth/claims.js';
import { userinfoClaimsClaim } from '../oauth/token_response.js';
import { isMachineToken, liveAccessTokenUser } from '../oauth/token_lookup.js';
import { DpopError, dpopAlgorithms, dpopContext, dpopHeader, verifyDpopProof } from '../oauth/dpop.js';
import { constantTimeEqual } from '../crypto/secrets.js';

function bearerChallenge(error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope', description?: string): string {
  const parts = ['Bearer realm="latchkey"'];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description}"`);
  if (error === 'insufficient_scope') parts.push('scope="openid"');
  return parts.join(', ');
}

function refuse(code: 'invalid_request' | 'invalid_token' | 'insufficient_scope', description: string, scheme: 'Bearer' | 'DPoP' = 'Bearer'): OAuthError {
  const status = code === 'invalid_request' ? 400 : code === 'insufficient_scope' ? 403 : 401;
  const challenge = scheme === 'DPoP' ? dpopChallenge(code, description) : bearerChallenge(code, description);
  return new OAuthError(code, description, { status, headers: { 'www-authenticate': challenge } });
}

/** RFC 9449 §7.1: the DPoP challenge, with the algorithms a proof may use. */
function dpopChallenge(error?: string, description?: string): string {
  const parts = [`DPoP algs="${dpopAlgorithms.join(' ')}"`];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description}"`);
  return parts.join(', ');
}

export async function userinfoRoutes(app: FastifyInstance): Promise<void> {
  const { signer } = app.services;

  async function userinfo(request: FastifyRequest, reply: FastifyReply) {
    reply.header('cache-control', 'no-store');
    const header = request.headers.authorization;
    const scheme = header !== undefined && /^dpop /i.test(header) ? 'DPoP' : 'Bearer';
    const fromHeader = header !== undefined && /^(bearer|dpop) /i.test(header) ? header.slice(scheme.length + 1).trim() : undefined;
    const body = request.method === 'POST' ? singleValued(request.body) : {};
    const fromBody = body.access_token;
    if (fromHeader !== undefined && fromBody !== undefined) throw refuse('invalid_request', 'Send the access token one way only.');
    const token = fromHeader ?? fromBody;
    if (token === undefined || token === '') {
      // RFC 6750 §3.1: a request with no credentials gets a bare challenge, no error code.
      // RFC 9449 §7.1: both schemes are offered.
      return reply
        .code(401)
        .header('www-authenticate', `${bearerChallenge()}, ${dpopChallenge()}`)
        .send({ error: 'invalid_token', error_description: 'An access token is required.' });
    }
    const claims = await signer.verifyAccessToken(token);
    if (!claims) throw refuse('invalid_token', 'The access token is invalid or expired.', scheme);
    const boundTo = (claims.cnf as { jkt?: unknown } | undefined)?.jkt;
    if (scheme === 'DPoP') {
      const dpop = dpopContext(app.services);
      let jkt: string;
      try {
        const proof = dpopHeader(request.headers);
        if (proof === undefined) throw refuse('invalid_token', 'A DPoP proof is required with a DPoP token.', 'DPoP');
        jkt = await verifyDpopProof(dpop, {
          proof,
          method: request.method,
          url: `${app.services.config.issuer}/userinfo`,
          accessToken: token,
          requireNonce: false,
        });
      } catch (err) {
        if (err instanceof DpopError)
          throw new OAuthError(err.code, err.description, {
            status: 401,
            detail: err.detail,
            headers: { 'www-authenticate': dpopChallenge(err.code, err.description) },
          });
        throw err;
      }
      if (typeof boundTo !== 'string' || !constantTimeEqual(boundTo, jkt))
        throw refuse('invalid_token', 'The access token is not bound to the key of this proof.', 'DPoP');
    } else if (boundTo !== undefined) {
      // A DPoP-bound token sent as a bearer token: whoever holds it does not hold its key.
      throw refuse('invalid_token', 'This access token is bound to a DPoP key: send it with a DPoP proof.', 'DPoP');
    }
    // A machine's token (client_credentials) has no person to describe.
    if (isMachineToken(claims)) throw refuse('invalid_token', 'The access token was not issued for a person.', scheme);
    const user = await liveAccessTokenUser(app.services, claims);
    if (!user) throw refuse('invalid_token', 'The access token has been revoked.');
    const scope = typeof claims.scope === 'string' ? claims.scope : '';
    if (!scope.split(' ').includes('openid')) throw refuse('insufficient_scope', 'The access token lacks the openid scope.');
    const named = claims[userinfoClaimsClaim];
    const requested = Array.isArray(named) ? named.filter((n): n is string => typeof n === 'string') : [];
    return { sub: user.id, ...userinfoClaims(user, scope, requested) };
  }

  app.get('/userinfo', userinfo);
  app.post('/userinfo', userinfo);
}
