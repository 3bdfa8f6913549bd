/**
 * grant_type=refresh_token (RFC 6749 §6; RFC 9700 §4.14). The token must be this client's, live
 * and unexpired; it is rotated atomically and a successor handed out. A rotated token presented
 * again within LATCHKEY_REFRESH_REUSE_GRACE of its rotation gets a pair of its own beside the
 * first (processes racing each other: every answer stays usable); within LATCHKEY_RETRY_WINDOW,
 * while no successor has been used, a fresh pair that replaces the unused successors (an answer
 * lost after the rotation committed); otherwise it is treated as stolen and the whole family is
 * revoked, the newest token included (oauth/refresh_tokens.ts says how far a family may branch). A
 * narrower scope may be asked for, and `resource` or `audience` may name the family's audience
 * again but no other (RFC 8707 §2.2); the refresh token keeps the original grant.
 */
import { z } from 'zod';
import { audit } from '../audit/audit_events.js';
import { epochSeconds } from '../clock.js';
import { OAuthError } from '../errors.js';
import {
  decideRefresh,
  familyBranchLimit,
  graceSuccessorLimit,
  narrowedScope,
  newRefreshToken,
  refreshTokenKey,
  retryLimit,
  retryMinimumDelaySeconds,
} from '../oauth/refresh_tokens.js';
import { randomId } from '../crypto/secrets.js';
import { issueTokens } from '../oauth/token_response.js';
import { isConfidential } from '../oauth/client_type.js';
import type { RefreshTokenRecord } from '../store/store.js';
import { accessTokenAudience, targetFields } from './target.js';
import type { GrantContext, GrantHandler } from './types.js';

const params = z.object({
  refresh_token: z.string({ error: 'refresh_token is required.' }).min(1, 'refresh_token is required.').max(512, 'refresh_token is too long.'),
  scope: z.string().max(1024, 'scope is too long.').optional(),
  ...targetFields,
});

const invalidToken = (detail: string) => new OAuthError('invalid_grant', 'The refresh token is invalid, expired or revoked.', { detail });

async function revokeFamily(context: GrantContext, token: RefreshTokenRecord, now: number): Promise<never> {
  await context.services.store.revokeRefreshFamily(token.familyId, now);
  audit(context, 'refresh_token.reuse_detected', { clientId: token.clientId, userId: token.userId });
  throw invalidToken('rotated refresh token reused: family revoked');
}

export const refreshTokenGrant = {
  grantType: 'refresh_token',
  clientGrantType: 'refresh_token',
  params,
  async handle(context, { refresh_token, scope, ...target }) {
    const { services, client } = context;
    const { store, clock, config } = services;
    const now = epochSeconds(clock);
    const token = await store.findRefreshToken(refreshTokenKey(refresh_token));
    if (!token) throw invalidToken('unknown refresh token');

    let decision = decideRefresh(token, client, now, config.refreshReuseGrace, config.retryWindow);
    if (decision.kind === 'wrong_client') throw invalidToken('refresh token of another client');
    if (decision.kind === 'revoked') throw invalidToken('refresh token revoked');
    if (decision.kind === 'expired') throw invalidToken('refresh token expired');
    if (decision.kind === 'reuse') return revokeFamily(context, token, now);

    // RFC 9449 §5: a family bound to a DPoP key is refreshed only with a proof by that key.
    if (token.dpopJkt !== undefined && context.dpopJkt !== token.dpopJkt) {
      throw invalidToken(
        context.dpopJkt === undefined ? 'DPoP-bound refresh token without a proof' : 'DPoP proof by another key than the refresh token is bound to',
      );
    }
    const accessScope = narrowedScope(token.scope, scope);
    if (accessScope === undefined) throw new OAuthError('invalid_scope', 'A refresh may not ask for more scope than was granted.');
    // Checked before the rotation, so a refused target leaves the refresh token usable.
    const audience = await accessTokenAudience(services, token.audience, target);
    const user = await store.findUserById(token.userId);
    if (!user || user.disabled) throw invalidToken('user missing or disabled');
    if (user.tokensRevokedAt !== undefined && token.createdAt <= user.tokensRevokedAt) throw invalidToken("issued before the user's tokens were revoked");

    // RFC 9449 §5: a public client's refresh token issued in answer to a proof is bound to its key.
    const dpopJkt = token.dpopJkt ?? (isConfidential(client) ? undefined : context.dpopJkt);
    const successor = newRefreshToken(config, now, {
      ...token,
      dpopJkt,
      familyExpiresAt: token.familyExpiresAt,
      parentId: token.id,
      accessTokenJti: randomId(),
    });
    if (decision.kind === 'rotate' && !(await store.rotateRefreshToken(token.id, successor.record, now))) {
      // Someone else rotated or revoked it between our read and our write: decide again.
      const current = await store.findRefreshToken(token.tokenHash);
      decision = current ? decideRefresh(current, client, now, config.refreshReuseGrace, config.retryWindow) : { kind: 'revoked' };
      if (decision.kind === 'reuse') return revokeFamily(context, current ?? token, now);
      if (decision.kind !== 'grace' && decision.kind !== 'retry') throw invalidToken(`refresh token ${decision.kind} during rotation`);
    }
    if (decision.kind === 'grace') {
      // Racing processes, each keeping the answer it gets: a pair beside the first, for at most the
      // reuse count of them and only while no successor has been used (then the race is over, and
      // this is a replay); past either it is reuse.
      const granted = await store.addGraceSuccessor(token.id, successor.record, { limit: graceSuccessorLimit, liveBranches: familyBranchLimit, now });
      if (granted !== true) return revokeFamily(context, token, now);
    }
    if (decision.kind === 'retry') {
      // Past the grace window: the successors from the lost answers are revoked (with their access
      // tokens) as this one is handed out, so there is one live branch; a used successor means the
      // family is someone else's now, and this is theft.
      const granted = await store.retryRotation(token.id, successor.record, now, retryLimit, Math.max(config.refreshReuseGrace, retryMinimumDelaySeconds));
      if (granted !== true) return revokeFamily(context, token, now);
      audit(context, 'refresh_token.retried', { clientId: client.clientId, userId: token.userId });
    }

    audit(context, 'token.issued', { grant: 'refresh_token', clientId: client.clientId, userId: user.id, graceReuse: decision.kind === 'grace' });
    return issueTokens(services, {
      // The access token is bound to the key of this request's proof, if any (a bound family's, checked above).
      dpopJkt: context.dpopJkt,
      client,
      user,
      scope: accessScope,
      audience,
      authTime: token.authTime,
      amr: token.amr,
      refreshToken: successor.value,
      refreshFamilyId: token.familyId,
      jti: successor.record.accessTokenJti,
      claims: token.claims,
      approval: { ip: token.approvedIp, userAgent: token.approvedUserAgent, sessionId: token.sessionId },
    });
  },
} satisfies GrantHandler<z.infer<typeof params>>;
