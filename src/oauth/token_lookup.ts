/**
 * What a presented token is, for revocation and introspection: one of our JWT access tokens
 * (signature, issuer and expiry checked) or one of our refresh tokens (by digest). The
 * `token_type_hint` only decides which is tried first (RFC 7009 §2.1, RFC 7662 §2.1).
 */
import type { JWTPayload } from 'jose';
import type { Services } from '../services.js';
import type { ClientRecord, RefreshTokenRecord, UserRecord } from '../store/store.js';
import { refreshTokenKey } from './refresh_tokens.js';
import { familyClaim } from './token_response.js';

export type IdentifiedToken = { kind: 'access_token'; claims: JWTPayload } | { kind: 'refresh_token'; record: RefreshTokenRecord };

export async function identifyToken(services: Services, token: string, hint: string | undefined): Promise<IdentifiedToken | undefined> {
  const asAccess = async (): Promise<IdentifiedToken | undefined> => {
    const claims = await services.signer.verifyAccessToken(token);
    return claims && { kind: 'access_token', claims };
  };
  const asRefresh = async (): Promise<IdentifiedToken | undefined> => {
    const record = token.length <= 512 ? await services.store.findRefreshToken(refreshTokenKey(token)) : undefined;
    return record && { kind: 'refresh_token', record };
  };
  const order = hint === 'refresh_token' ? [asRefresh, asAccess] : [asAccess, asRefresh];
  for (const attempt of order) {
    const found = await attempt();
    if (found) return found;
  }
  return undefined;
}

/**
 * The user behind a verified access token while it is still live: not revoked by its jti, not
 * issued with a refresh-token family that has been revoked since, issued by a client that still
 * exists (and not by an earlier client of the same id), its user not disabled, and issued after
 * the user's last "end everything" (a new password, `users revoke-tokens`). `iat` is in seconds,
 * so a token issued in the very second of a revocation is refused too: better one re-sign-in
 * than a stolen token that survives.
 */
export async function liveAccessTokenUser(services: Services, claims: JWTPayload): Promise<UserRecord | undefined> {
  const { store } = services;
  const issuedAt = Number(claims.iat);
  if (isMachineToken(claims)) return undefined;
  if (await store.isAccessTokenRevoked(String(claims.jti))) return undefined;
  const family = claims[familyClaim];
  if (typeof family === 'string' && (await store.isRefreshFamilyRevoked(family))) return undefined;
  if (!(await liveClient(services, claims))) return undefined;
  const user = await store.findUserById(String(claims.sub));
  if (!user || user.disabled) return undefined;
  if (user.tokensRevokedAt !== undefined && issuedAt <= user.tokensRevokedAt) return undefined;
  return user;
}

/**
 * A client_credentials token: the client is its own subject and nobody signed in (no auth_time).
 * Person tokens always carry auth_time, so a user whose id happened to equal a client_id could
 * not pass for a machine, nor the other way round.
 */
export function isMachineToken(claims: JWTPayload): boolean {
  return claims.sub !== undefined && claims.sub === claims.client_id && claims.auth_time === undefined;
}

/** The client behind a token while it may still use it: it exists, is enabled, and is the client that got the token. */
async function liveClient(services: Services, claims: JWTPayload): Promise<ClientRecord | undefined> {
  const issuedAt = Number(claims.iat);
  const client = await services.store.findClient(String(claims.client_id));
  if (!client || client.disabled) return undefined;
  // A token older than its client belongs to an earlier client of the same id (also one removed
  // before removals were recorded); tokensRevokedAt also catches a removal in the same second.
  if (issuedAt < client.createdAt || (client.tokensRevokedAt !== undefined && issuedAt <= client.tokensRevokedAt)) return undefined;
  return client;
}

/** A live client_credentials token's client (not revoked, client enabled and the same), or undefined. */
export async function liveMachineTokenClient(services: Services, claims: JWTPayload): Promise<ClientRecord | undefined> {
  if (!isMachineToken(claims)) return undefined;
  if (await services.store.isAccessTokenRevoked(String(claims.jti))) return undefined;
  return liveClient(services, claims);
}
