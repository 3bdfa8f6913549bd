/**
 * Refresh tokens (RFC 6749 §6, RFC 9700 §4.14): opaque `lk_rt_` secrets stored as digests, rotated
 * on every use. All tokens descending from one sign-in form a family with an absolute end; each
 * token also expires after an idle period. Reusing a rotated token is theft and revokes the family,
 * with two exceptions for the client whose own answer never became a used successor:
 * - within a short grace window after the rotation (LATCHKEY_REFRESH_REUSE_GRACE), the same client
 *   gets a fresh pair beside the first (two processes of one CLI refreshing at the same moment);
 * - later, within LATCHKEY_RETRY_WINDOW, while no successor has been used, it gets a fresh pair
 *   and the unused successors are revoked with their access tokens (an answer lost to a crash or
 *   a dropped connection, retried after a restart or a back-off).
 * Either way the family never has two live branches once one is used (RFC 9700 §4.14.2).
 */
import type { Config } from '../config.js';
import { orderedSecret, orderedSecretDigest } from '../crypto/ordered_secrets.js';
import { randomId, secretPrefix } from '../crypto/secrets.js';
import type { ClientRecord, RefreshTokenRecord } from '../store/store.js';

export interface NewRefreshToken {
  value: string;
  record: RefreshTokenRecord;
}

export type RefreshTokenFields = Pick<
  RefreshTokenRecord,
  'familyId' | 'clientId' | 'userId' | 'scope' | 'audience' | 'authTime' | 'amr' | 'approvedIp' | 'approvedUserAgent' | 'sessionId' | 'dpopJkt' | 'claims'
> & {
  /** Kept from the family when rotating; a new family ends when its issuer says (oauth/browser_policy.ts), else LATCHKEY_REFRESH_TOKEN_TTL from now. */
  familyExpiresAt?: number;
  /** The token this one succeeds (rotation, grace); none for the first of a family. */
  parentId?: string;
  /** The jti of the access token handed out with it; a new one when not given. */
  accessTokenJti?: string | undefined;
};

/** The key a refresh token is stored and looked up by. */
export function refreshTokenKey(token: string): string {
  return orderedSecretDigest(token, secretPrefix.refreshToken);
}

export function newRefreshToken(config: Config, now: number, fields: RefreshTokenFields): NewRefreshToken {
  // Stored under a key that grows with time (to the millisecond: `now` is whole seconds), so the
  // tokens of one commit share an index page.
  const value = orderedSecret(secretPrefix.refreshToken);
  const familyExpiresAt = fields.familyExpiresAt ?? now + config.refreshTokenTtl;
  return {
    value,
    record: {
      id: randomId(),
      tokenHash: refreshTokenKey(value),
      familyId: fields.familyId,
      clientId: fields.clientId,
      userId: fields.userId,
      scope: fields.scope,
      audience: fields.audience,
      authTime: fields.authTime,
      amr: fields.amr,
      createdAt: now,
      expiresAt: Math.min(familyExpiresAt, now + config.refreshTokenIdleTtl),
      familyExpiresAt,
      rotatedAt: undefined,
      revokedAt: undefined,
      parentId: fields.parentId,
      supersededAt: undefined,
      approvedIp: fields.approvedIp,
      approvedUserAgent: fields.approvedUserAgent,
      sessionId: fields.sessionId,
      dpopJkt: fields.dpopJkt,
      claims: fields.claims,
      accessTokenJti: fields.accessTokenJti ?? randomId(),
    },
  };
}

export type RefreshDecision =
  /** Not this client's token: refused, nothing revoked. */
  | { kind: 'wrong_client' }
  | { kind: 'revoked' }
  | { kind: 'expired' }
  /** Live: rotate it. */
  | { kind: 'rotate' }
  /** Rotated moments ago and presented again by its client: a fresh pair, no revocation. */
  | { kind: 'grace' }
  /** Rotated within the retry window, presented again: a fresh pair replacing the unused successors. */
  | { kind: 'retry' }
  /** Rotated and presented again later: theft, revoke the family. */
  | { kind: 'reuse' };

/** At most this many extra pairs per rotated token within the grace window (three racing processes). */
export const graceSuccessorLimit = 2;

/** At most this many retries of one rotated token after its grace window (a restart loop gives up long before). */
export const retryLimit = 5;

/**
 * A retry comes after its client noticed the answer was lost (a timeout, a restart), never in the
 * same moment as the rotation: requests that close together are a race, and with the grace window
 * off a race's losers are reuse, not retries that would take the winner's pair away.
 */
export const retryMinimumDelaySeconds = 2;

export function decideRefresh(token: RefreshTokenRecord, client: ClientRecord, now: number, graceSeconds: number, retrySeconds = 0): RefreshDecision {
  if (token.clientId !== client.clientId) return { kind: 'wrong_client' };
  if (token.revokedAt !== undefined) return { kind: 'revoked' };
  if (now >= token.familyExpiresAt) return { kind: 'expired' };
  // A sibling of this token was used: this branch was handed to a second holder (a racing process
  // or a thief) and is dead. Presenting it is reuse, grace window or not (RFC 9700 §4.14.2).
  if (token.supersededAt !== undefined) return { kind: 'reuse' };
  // A rotated token presented again is theft even past its own idle expiry: the thief may be
  // rotating the family while the rightful client sleeps (RFC 9700 §4.14).
  if (token.rotatedAt !== undefined) {
    const since = now - token.rotatedAt;
    if (graceSeconds > 0 && since <= graceSeconds) return { kind: 'grace' };
    if (retrySeconds > 0 && since >= retryMinimumDelaySeconds && since <= retrySeconds) return { kind: 'retry' };
    return { kind: 'reuse' };
  }
  if (now >= token.expiresAt) return { kind: 'expired' };
  return { kind: 'rotate' };
}

/** A narrower scope may be asked for, a wider one not (RFC 6749 §6). Undefined if it is wider. */
export function narrowedScope(granted: string, requested: string | undefined): string | undefined {
  if (requested === undefined || requested.trim() === '') return granted;
  const allowed = new Set(granted.split(' '));
  const asked = [...new Set(requested.split(' ').filter((s) => s !== ''))];
  return asked.every((s) => allowed.has(s)) ? asked.join(' ') : undefined;
}
