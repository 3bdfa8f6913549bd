/**
 * Builds the token response (RFC 6749 §5.1) shared by every grant: a JWT access token
 * (RFC 9068: typ at+jwt, iss, sub, aud, client_id, scope, iat, exp, jti) and, when offline_access
 * was granted, an opaque refresh token stored only as its digest.
 */
import { epochSeconds } from '../clock.js';
import { randomId, randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import type { Services } from '../services.js';
import type { ClientRecord, UserRecord } from '../store/store.js';

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

export interface IssueTokensInput {
  client: ClientRecord;
  user: UserRecord;
  scope: string;
  audience: string;
  authTime: number;
}

export async function issueTokens(services: Services, input: IssueTokensInput): Promise<TokenResponse> {
  const { config, signer, store, clock } = services;
  const now = epochSeconds(clock);
  const accessToken = await signer.sign(
    {
      iss: config.issuer,
      sub: input.user.id,
      aud: input.audience,
      client_id: input.client.clientId,
      scope: input.scope,
      auth_time: input.authTime,
      iat: now,
      exp: now + config.accessTokenTtl,
      jti: randomId(),
    },
    'at+jwt',
  );
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: config.accessTokenTtl,
    scope: input.scope,
  };
  if (input.scope.split(' ').includes('offline_access')) {
    const refreshToken = randomSecret(secretPrefix.refreshToken);
    await store.createRefreshToken({
      id: randomId(),
      tokenHash: sha256(refreshToken),
      familyId: randomId(),
      clientId: input.client.clientId,
      userId: input.user.id,
      scope: input.scope,
      audience: input.audience,
      authTime: input.authTime,
      createdAt: now,
      expiresAt: now + config.refreshTokenTtl,
    });
    response.refresh_token = refreshToken;
  }
  return response;
}
