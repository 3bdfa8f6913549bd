/**
 * Refresh tokens (RFC 6749 §6, RFC 9700 §4.14): opaque `lk_rt_` secrets stored as digests, rotated
 * on every use. All tokens descending from one sign-in form a family with an absolute end; each
 * token also expires after an idle period. Reusing a rotated token is theft and revokes the family,
 * with two exceptions for the client presenting it again, which together are the one rule for a
 * token or code presented again (docs/http-reference.md, "A token or code presented again"):
 * - the race: within LATCHKEY_REFRESH_REUSE_GRACE of the rotation, while none of the token's
 *   successors has been used, the same client gets a pair of its own — two processes on one
 *   machine refreshing at the same moment — and every answer of the race goes on as a branch of
 *   the family, since each is held by a process that will refresh it later;
 * - the lost answer: later, within LATCHKEY_RETRY_WINDOW, while no successor has been used, it
 *   gets a fresh pair and the unused successors are revoked with their access tokens (an answer
 *   lost to a crash or a dropped connection, retried after a restart or a back-off).
 * How far the family may branch, and why, is said at graceSuccessorLimit and familyBranchLimit.
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
  /** Rotated moments ago and presented again by its client (a race): a pair of its own beside the others, no revocation. */
  | { kind: 'grace' }
  /** Rotated within the retry window, presented again: a fresh pair replacing the unused successors. */
  | { kind: 'retry' }
  /** Rotated and presented again later: theft, revoke the family. */
  | { kind: 'reuse' };

/**
 * The reuse count: at most this many extra pairs per rotated token within the grace window, so one
 * race has at most three answers (three processes refreshing at once; Hydra's
 * rotation_grace_reuse_count is the same bound). One more presentation in the window is theft.
 */
export const graceSuccessorLimit = 2;

/**
 * At most this many live refresh tokens (branch tips) per family. The answers of a race all live,
 * because each is held by a process that refreshes it later; but branches that nobody holds any
 * more pile up otherwise — a process that lost the race to write a shared credentials file leaves
 * its answer behind, unused until its idle expiry — and each live tip is a token that works for
 * whoever has it. Five: one race's three answers and two more branches still in use (another
 * race's, a long-running agent's). A race past it supersedes the tips of other branches made
 * longest ago (never one of its own answers); their holder, if there is one after all, presents a
 * dead token, and that is reuse: the family is revoked (RFC 9700 §4.14.2). The bound is on holders,
 * not requests: every answer still costs one request, and a thief holding one token can reach no
 * more than its holder could.
 */
export const familyBranchLimit = 5;

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
  // Replaced unused (a lost answer whose client recovered it, or a stale branch pruned): whoever
  // presents it is not the client that holds the family now. Reuse, grace window or not (RFC 9700 §4.14.2).
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
