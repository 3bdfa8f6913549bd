/**
 * Who may call the management API: a live access token (RFC 9068) issued for the built-in API
 * `{issuer}/api/v1` and carrying the scope the call needs. Tokens are verified as /userinfo
 * verifies them (signature, issuer, expiry, revocation, the client and person still there), and
 * a DPoP-bound token (RFC 9449 §7) must come as `Authorization: DPoP <token>` with a proof by its
 * key for this very request; as Bearer — a stolen copy — it is refused.
 *
 * Refusals follow RFC 6750 §3: no token → 401 with a bare challenge; a bad, expired, revoked or
 * other-audience token → 401 `invalid_token`; a good token without the scope → 403
 * `insufficient_scope` naming the scope needed (§3.1). Each refusal carries WWW-Authenticate.
 *
 * Calls are counted per caller (LATCHKEY_RATE_LIMIT_MANAGEMENT); past the limit → 429 with Retry-After.
 *
 * A person's scopes are narrowed to what their roles allow now, and a machine's to what its grant
 * allows now: taking a role or a grant away ends management access at once, not at the token's expiry.
 */
import type { FastifyRequest } from 'fastify';
import type { JWTPayload } from 'jose';
import { OAuthError } from '../errors.js';
import { constantTimeEqual } from '../crypto/secrets.js';
import { DpopError, dpopAlgorithms, dpopContext, dpopHeader, verifyDpopProof } from '../oauth/dpop.js';
import { isMachineToken, liveAccessTokenUser, liveMachineTokenClient } from '../oauth/token_lookup.js';
import { managementAudience, type ManagementScope } from './management_api.js';

export type ManagementCaller = { kind: 'person'; userId: string; username: string } | { kind: 'client'; clientId: string };

export interface AuthorizedManagementCall {
  caller: ManagementCaller;
  /** The management scopes the caller holds now (the token's, narrowed to its roles or grant). */
  scopes: string[];
}

type Scheme = 'Bearer' | 'DPoP';
type RefusalCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

/** RFC 6750 §3 and RFC 9449 §7.1: both schemes are offered; an error names the scheme that was used. */
function challenge(scheme: Scheme | undefined, error?: string, description?: string, scope?: string): string {
  const bearer = ['Bearer realm="latchkey"'];
  const dpop = [`DPoP algs="${dpopAlgorithms.join(' ')}"`];
  const parts = scheme === 'DPoP' ? dpop : bearer;
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description}"`);
  if (scope) parts.push(`scope="${scope}"`);
  if (scheme === undefined) return `${bearer.join(', ')}, ${dpop.join(', ')}`;
  return parts.join(', ');
}

function refuse(code: RefusalCode, description: string, scheme: Scheme, scope?: string, detail?: string): OAuthError {
  const status = code === 'invalid_request' ? 400 : code === 'insufficient_scope' ? 403 : 401;
  return new OAuthError(code, description, { status, detail, headers: { 'www-authenticate': challenge(scheme, code, description, scope) } });
}

/**
 * The caller each request's token names, once it is known to be live: a call refused after that
 * (429, 403 insufficient_scope) is still audited under who made it (operations.ts).
 */
const identifiedCallers = new WeakMap<FastifyRequest, ManagementCaller>();

/** Who made `request`, when its token was live, even if the call was then refused. */
export function identifiedCaller(request: FastifyRequest): ManagementCaller | undefined {
  return identifiedCallers.get(request);
}

function audiences(claims: JWTPayload): string[] {
  return typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
}

/**
 * The caller of a management call when its token holds `scope`; otherwise throws an OAuthError
 * (status 400/401/403 with WWW-Authenticate) that the API's error handler renders as a problem.
 */
export async function authorizeManagementCall(request: FastifyRequest, scope: ManagementScope | (string & {})): Promise<AuthorizedManagementCall> {
  const services = request.server.services;
  const { config, signer, store } = services;
  const header = request.headers.authorization;
  const match = header === undefined ? null : /^(bearer|dpop) +(\S+) *$/i.exec(header);
  if (header === undefined || header.trim() === '') {
    // RFC 6750 §3.1: a request with no credentials gets a bare challenge, no error code.
    throw new OAuthError('invalid_token', 'An access token for the management API is required.', {
      status: 401,
      headers: { 'www-authenticate': challenge(undefined) },
    });
  }
  const [, schemeName, token] = match ?? [];
  if (schemeName === undefined || token === undefined)
    throw refuse('invalid_request', 'Send the access token in the Authorization header, after the word Bearer or DPoP.', 'Bearer');
  const scheme: Scheme = schemeName.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer';
  const claims = await signer.verifyAccessToken(token);
  if (!claims) throw refuse('invalid_token', 'The access token is invalid or expired.', scheme);
  const audience = managementAudience(config.issuer);
  if (!audiences(claims).includes(audience))
    throw refuse('invalid_token', 'The access token was not issued for the management API.', scheme, undefined, `aud is not ${audience}`);

  const boundTo = (claims.cnf as { jkt?: unknown } | undefined)?.jkt;
  if (scheme === 'DPoP') {
    let jkt: string;
    try {
      const proof = dpopHeader(request.headers);
      if (proof === undefined) throw refuse('invalid_token', 'A DPoP proof is required with a DPoP token.', 'DPoP');
      jkt = await verifyDpopProof(dpopContext(services), {
        proof,
        method: request.method,
        // RFC 9449 §4.3: htu is the request's URL without query or fragment.
        url: `${config.issuer.replace(/\/+$/, '')}${request.url.split('?')[0]}`,
        accessToken: token,
        requireNonce: false,
      });
    } catch (err) {
      if (err instanceof DpopError)
        throw new OAuthError(err.code, err.description, {
          status: 401,
          detail: err.detail,
          headers: { 'www-authenticate': challenge('DPoP', err.code, err.description) },
        });
      throw err;
    }
    if (typeof boundTo !== 'string' || !constantTimeEqual(boundTo, jkt))
      throw refuse('invalid_token', 'The access token is not bound to the key of this proof.', 'DPoP');
  } else if (boundTo !== undefined) {
    // A DPoP-bound token sent as a bearer token: whoever holds it does not hold its key.
    throw refuse('invalid_token', 'This access token is bound to a DPoP key: send it with a DPoP proof.', 'DPoP');
  }

  const tokenScopes = (typeof claims.scope === 'string' ? claims.scope : '').split(' ').filter((s) => s !== '');
  let caller: ManagementCaller;
  let allowedNow: string[];
  if (isMachineToken(claims)) {
    const client = await liveMachineTokenClient(services, claims);
    if (!client) throw refuse('invalid_token', 'The access token has been revoked.', scheme);
    caller = { kind: 'client', clientId: client.clientId };
    allowedNow = (await store.findClientGrant(client.clientId, audience))?.scopes ?? [];
  } else {
    const user = await liveAccessTokenUser(services, claims);
    if (!user) throw refuse('invalid_token', 'The access token has been revoked.', scheme);
    caller = { kind: 'person', userId: user.id, username: user.username };
    allowedNow = await store.permittedScopes(user.id, audience);
  }
  identifiedCallers.set(request, caller);
  // Counted per caller, not per address: automation runs from many places (CI runners, pods).
  const counted = await services.rateLimits.managementCaller.hit(caller.kind === 'person' ? `person:${caller.userId}` : `client:${caller.clientId}`);
  if (counted.limited)
    throw new OAuthError('temporarily_unavailable', 'Too many management calls: wait and try again.', {
      status: 429,
      headers: { 'retry-after': String(Math.max(1, counted.retryAfter)) },
    });
  const declared = (await store.findApi(audience))?.scopes ?? [];
  const scopes = tokenScopes.filter((s) => allowedNow.includes(s) && declared.includes(s));
  if (!scopes.includes(scope)) throw refuse('insufficient_scope', `This call needs the ${scope} scope.`, scheme, scope);
  return { caller, scopes };
}
