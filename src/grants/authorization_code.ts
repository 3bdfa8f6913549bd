/**
 * grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6, OIDC Core §3.1.3).
 * The code must belong to the authenticated client, be unexpired, come with the same redirect_uri
 * and, when a challenge was sent, with the matching PKCE verifier; a verifier without a challenge
 * is refused too (no PKCE downgrade, RFC 9700 §2.1.1). Redemption is one atomic step in the store;
 * a second redemption is invalid_grant and revokes what the first one issued (RFC 6749 §4.1.2).
 * `resource` or `audience` may name the code's audience again, never another (RFC 8707 §2.2).
 */
import { z } from 'zod';
import { audit } from '../audit/audit_events.js';
import { epochSeconds } from '../clock.js';
import { randomId, sha256 } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import { verifierMatches } from '../oauth/pkce.js';
import { issueTokens } from '../oauth/token_response.js';
import type { Services } from '../services.js';
import type { AuthorizationCodeRecord } from '../store/store.js';
import { accessTokenAudience, targetFields } from './target.js';
import type { GrantContext, GrantHandler } from './types.js';

const params = z.object({
  code: z.string({ error: 'code is required.' }).min(1, 'code is required.').max(512, 'code is too long.'),
  redirect_uri: z.string({ error: 'redirect_uri is required.' }).min(1, 'redirect_uri is required.').max(2048, 'redirect_uri is too long.'),
  code_verifier: z.string().max(256, 'code_verifier is too long.').optional(),
  ...targetFields,
});

const invalidCode = (detail: string) => new OAuthError('invalid_grant', 'The authorization code is invalid, expired or already used.', { detail });

/** A replayed code: revoke everything its first redemption issued. */
async function revokeIssued(services: Services, code: AuthorizationCodeRecord, context: GrantContext): Promise<void> {
  const now = epochSeconds(services.clock);
  if (code.accessTokenJti) await services.store.revokeAccessToken(code.accessTokenJti, now + services.config.accessTokenTtl);
  if (code.refreshFamilyId) await services.store.revokeRefreshFamily(code.refreshFamilyId, now);
  audit(context, 'authorization_code.replayed', { clientId: code.clientId, userId: code.userId });
}

export const authorizationCodeGrant = {
  grantType: 'authorization_code',
  clientGrantType: 'authorization_code',
  params,
  async handle(context, { code, redirect_uri, code_verifier, ...target }) {
    const { services, client } = context;
    const { store, clock } = services;
    const now = epochSeconds(clock);
    const codeHash = sha256(code);
    const record = await store.findAuthorizationCode(codeHash);
    if (!record) throw invalidCode('unknown authorization code');
    if (record.consumedAt !== undefined) {
      await revokeIssued(services, record, context);
      throw invalidCode('authorization code replayed');
    }
    if (record.clientId !== client.clientId) throw invalidCode('authorization code of another client');
    if (record.expiresAt <= now) throw invalidCode('authorization code expired');
    if (record.redirectUri !== redirect_uri) throw invalidCode('redirect_uri differs from the authorization request');
    if (record.codeChallenge !== undefined) {
      if (code_verifier === undefined) throw invalidCode('code_verifier missing');
      if (!verifierMatches(code_verifier, record.codeChallenge)) throw invalidCode('code_verifier does not match');
    } else if (code_verifier !== undefined) {
      throw invalidCode('code_verifier sent for a code issued without code_challenge');
    }
    // RFC 9449 §10: a code bound to a DPoP key is redeemed only with a proof by that key.
    if (record.dpopJkt !== undefined && context.dpopJkt !== record.dpopJkt) throw invalidCode('DPoP-bound code without a proof by its key');
    const user = await store.findUserById(record.userId);
    if (!user || user.disabled) throw invalidCode('user missing or disabled');
    if (user.tokensRevokedAt !== undefined && record.createdAt <= user.tokensRevokedAt) throw invalidCode("issued before the user's tokens were revoked");
    // Before the code is spent: a client that named the wrong target may try again with it.
    const audience = await accessTokenAudience(services, record.audience, target);

    const issued = { accessTokenJti: randomId(), refreshFamilyId: randomId() };
    const consumed = await store.consumeAuthorizationCode(codeHash, now, issued);
    if (!consumed) {
      // Another redemption won the race: this one is a replay.
      const winner = await store.findAuthorizationCode(codeHash);
      if (winner) await revokeIssued(services, winner, context);
      throw invalidCode('authorization code redeemed concurrently');
    }
    audit(context, 'token.issued', { grant: 'authorization_code', clientId: client.clientId, userId: user.id });
    return issueTokens(services, {
      dpopJkt: context.dpopJkt,
      client,
      user,
      scope: consumed.scope,
      audience,
      authTime: consumed.authTime,
      amr: consumed.amr,
      jti: issued.accessTokenJti,
      refreshFamilyId: issued.refreshFamilyId,
      idToken: { nonce: consumed.nonce },
      claims: consumed.claims,
      approval: { ip: consumed.approvedIp, userAgent: consumed.approvedUserAgent, sessionId: consumed.sessionId },
    });
  },
} satisfies GrantHandler<z.infer<typeof params>>;
