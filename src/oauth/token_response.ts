/**
 * Builds the token response (RFC 6749 §5.1) shared by every grant: a JWT access token
 * (RFC 9068: typ at+jwt, iss, sub, aud, client_id, scope, iat, exp, jti, and `roles`), an opaque
 * refresh token stored only as its digest when offline_access was granted, and for the
 * Authorization Code flow with `openid` an id_token (OIDC Core §2, §3.1.3.6). The scope is first
 * narrowed to what the person's roles allow now (oauth/permissions.ts).
 */
import { epochSeconds } from '../clock.js';
import { OAuthError } from '../errors.js';
import { leftHalfSha256, randomId } from '../crypto/secrets.js';
import type { Services } from '../services.js';
import type { AuthMethod, ClientRecord, RequestedClaims, UserRecord } from '../store/store.js';
import { authenticationClaims } from '../mfa/amr.js';
import { idTokenClaims } from './claims.js';
import { newRefreshToken, type NewRefreshToken } from './refresh_tokens.js';
import { nothingPermitted, permittedAccess, type PermittedAccess } from './permissions.js';
import { isConfidential } from './client_type.js';
import { refreshFamilyLifetime } from './browser_policy.js';

export interface TokenResponse {
  access_token: string;
  /** DPoP when the request carried a proof (RFC 9449 §5): the token is bound to its key. */
  token_type: 'Bearer' | 'DPoP';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

/** Private access-token claim naming the refresh-token family the token was issued with. */
export const familyClaim = 'lk_family';

/** Private access-token claim listing the claims the `claims` parameter asked userinfo for. */
export const userinfoClaimsClaim = 'lk_userinfo';

/** id_tokens are for the client's sign-in moment, not for API calls: one hour at most. */
const maxIdTokenLifetime = 3600;

export interface IssueTokensInput {
  client: ClientRecord;
  user: UserRecord;
  scope: string;
  audience: string;
  authTime: number;
  /** How the person signed in (RFC 8176): `amr` and `acr` in the id_token and the access token. */
  amr: AuthMethod[];
  /** Chosen in advance when the caller records them before issuing (authorization codes). */
  jti?: string;
  refreshFamilyId?: string;
  /** Present for the Authorization Code flow: an id_token is issued when `openid` was granted. */
  idToken?: { nonce: string | undefined };
  /** A refresh token the caller has already stored (rotation); otherwise offline_access starts a new family. */
  refreshToken?: string;
  /** Where the grant was approved from and in which browser session, for "Devices and apps" and `sid`. */
  approval: { ip: string | undefined; userAgent: string | undefined; sessionId: string | undefined };
  /** The thumbprint of the DPoP key the request proved (RFC 9449): the access token is bound to it. */
  dpopJkt?: string | undefined;
  /** The claims the authorization request asked for by name (OIDC `claims`). */
  claims?: RequestedClaims | undefined;
}

/**
 * What an issuance settles before anything is stored: the scope the person's roles allow now, and
 * the refresh token to store when offline_access starts a new family. The caller stores it (alone,
 * or in the same transaction as the grant it redeems), then finishIssuance signs the tokens.
 */
export interface PreparedIssuance {
  now: number;
  access: PermittedAccess;
  /** The refresh token that starts a new family, to be stored before the tokens are handed out. */
  newRefreshToken: NewRefreshToken | undefined;
  refreshToken: string | undefined;
  familyId: string | undefined;
  /** The access token's jti, chosen here so that it can be stored with what it is issued with. */
  jti: string;
}

export async function prepareIssuance(services: Services, input: IssueTokensInput): Promise<PreparedIssuance> {
  const { config, store, clock } = services;
  const now = epochSeconds(clock);
  // The refresh token keeps only what was allowed, so a role given later never widens an old grant.
  const access = await permittedAccess(store, input.user, input.audience, input.scope);
  const scope = access.scope;
  // Every scope asked for was an API's, and the roles allow none of them (any more): no token.
  if (scope === '') throw new OAuthError('invalid_scope', nothingPermitted);
  // The refresh token comes first, so the access token can name its family: revoking the family
  // (sign-out, theft, a replayed code) then refuses the access tokens it issued too.
  const jti = input.jti ?? randomId();
  if (input.refreshToken === undefined && scope.split(' ').includes('offline_access')) {
    const familyId = input.refreshFamilyId ?? randomId();
    const refresh = newRefreshToken(config, now, {
      familyId,
      // A browser application's sign-in ends sooner (oauth/browser_policy.ts).
      familyExpiresAt: now + refreshFamilyLifetime(config, input.client),
      clientId: input.client.clientId,
      userId: input.user.id,
      scope,
      audience: input.audience,
      authTime: input.authTime,
      amr: input.amr,
      approvedIp: input.approval.ip,
      approvedUserAgent: input.approval.userAgent,
      sessionId: input.approval.sessionId,
      // RFC 9449 §5: a public client's refresh token is bound to the key too (a confidential
      // client's is already bound to its authentication).
      dpopJkt: isConfidential(input.client) ? undefined : input.dpopJkt,
      claims: input.claims,
      accessTokenJti: jti,
    });
    return { now, access, newRefreshToken: refresh, refreshToken: refresh.value, familyId, jti };
  }
  return {
    now,
    access,
    newRefreshToken: undefined,
    refreshToken: input.refreshToken,
    familyId: input.refreshToken === undefined ? undefined : input.refreshFamilyId,
    jti,
  };
}

/** Thrown when the refresh token could not be stored: the person's sign-ins were ended meanwhile. */
export function signInEnded(): OAuthError {
  return new OAuthError('invalid_grant', 'The sign-in has ended. Sign in again.', { detail: "the user's tokens were revoked during the redemption" });
}

export async function issueTokens(services: Services, input: IssueTokensInput): Promise<TokenResponse> {
  const prepared = await prepareIssuance(services, input);
  // Not if the person's sign-ins were ended since the grant read the user (a new password racing
  // this redemption): the family would escape that revocation.
  if (
    prepared.newRefreshToken &&
    !(await services.store.createRefreshToken(prepared.newRefreshToken.record, { userTokensRevokedAt: input.user.tokensRevokedAt }))
  ) {
    throw signInEnded();
  }
  return finishIssuance(services, input, prepared);
}

/** Signs the access token (and the id_token) of a prepared issuance whose refresh token is stored. */
export async function finishIssuance(services: Services, input: IssueTokensInput, prepared: PreparedIssuance): Promise<TokenResponse> {
  const { config, signer } = services;
  const { now, access, refreshToken, familyId, jti } = prepared;
  const scope = access.scope;
  const scopes = scope.split(' ');
  const accessToken = await signer.signAccessToken({
    iss: config.issuer,
    sub: input.user.id,
    aud: input.audience,
    client_id: input.client.clientId,
    scope,
    auth_time: input.authTime,
    // RFC 9068 §2.2.1: an API can require a second factor for what it guards.
    ...authenticationClaims(input.amr),
    iat: now,
    exp: now + config.accessTokenTtl,
    jti,
    // RFC 9068 §2.2.3.1: the groups the upstream identity provider reported at the last sign-in.
    ...(input.user.groups.length === 0 ? {} : { groups: input.user.groups }),
    // RFC 9068 §2.2.3.1: the roles the person holds, for an API only (not told to every client's userinfo token).
    ...(input.user.roles.length === 0 || access.api === undefined ? {} : { roles: input.user.roles }),
    ...(familyId === undefined ? {} : { [familyClaim]: familyId }),
    // What userinfo answers beyond the scopes' claims (OIDC Core §5.5): the token carries it there.
    ...(input.claims === undefined || input.claims.userinfo.length === 0 ? {} : { [userinfoClaimsClaim]: input.claims.userinfo }),
    // RFC 9449 §6: the key the token is bound to.
    ...(input.dpopJkt === undefined ? {} : { cnf: { jkt: input.dpopJkt } }),
  });
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: input.dpopJkt === undefined ? 'Bearer' : 'DPoP',
    expires_in: config.accessTokenTtl,
    scope,
    ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
  };
  if (input.idToken && scopes.includes('openid')) {
    response.id_token = await signer.signIdToken({
      iss: config.issuer,
      sub: input.user.id,
      aud: input.client.clientId,
      iat: now,
      exp: now + Math.min(maxIdTokenLifetime, config.accessTokenTtl),
      auth_time: input.authTime,
      ...authenticationClaims(input.amr),
      // The browser session, for RP-Initiated and Back-Channel Logout.
      ...(input.approval.sessionId === undefined ? {} : { sid: input.approval.sessionId }),
      ...(input.idToken.nonce === undefined ? {} : { nonce: input.idToken.nonce }),
      at_hash: leftHalfSha256(accessToken),
      ...idTokenClaims(input.user, scope, input.claims, config.idTokenScopeClaims),
      ...(input.user.groups.length === 0 ? {} : { groups: input.user.groups }),
    });
  }
  return response;
}
