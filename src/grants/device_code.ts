/**
 * grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 §3.4, §3.5).
 * Every poll is recorded (oauth/device_polls.ts); the answer comes from decidePoll. Handing out
 * tokens is one atomic approved → consumed step in the store (with the refresh token stored in the
 * same transaction), so of many simultaneous polls exactly one gets tokens and the rest see a
 * spent code (invalid_grant). Tokens already issued are left alone on such a replay: only the
 * device holds the device code, and it racing itself is not theft.
 *
 * A device whose answer was lost after the redemption committed (a crash, a dropped connection)
 * and that polls again at least one interval after the latest tokens were handed out, within
 * LATCHKEY_RETRY_WINDOW (seconds: the next poll) of the redemption, recovers: it gets new tokens in
 * the same refresh family and those of the lost answer are revoked, as long as their refresh token
 * was never used (then their holder is not the device that lost them) and, when the redemption was
 * DPoP-bound, the poll proves the same key (RFC 9449 §5). Anyone else presenting the code — past
 * the window, or without that key — gets invalid_grant and takes nothing from the device.
 *
 * `resource` or `audience` on a poll may name the device grant's audience, never another (RFC 8707
 * §2.2): the access token keeps the audience the device authorization request asked for.
 */
import { z } from 'zod';
import { audit } from '../audit/audit_events.js';
import { OAuthError, tooManyRequests } from '../errors.js';
import { orderedSecretDigest } from '../crypto/ordered_secrets.js';
import { secretPrefix } from '../crypto/secrets.js';
import { decidePoll } from '../oauth/device_poll.js';
import { rateLimitKey } from '../limits/rate_limit.js';
import { finishIssuance, prepareIssuance, signInEnded, type IssueTokensInput, type PreparedIssuance, type TokenResponse } from '../oauth/token_response.js';
import type { DeviceGrantRecord } from '../store/store.js';
import { accessTokenAudience, targetFields } from './target.js';
import type { GrantContext, GrantHandler } from './types.js';

const params = z.object({
  device_code: z.string({ error: 'device_code is required.' }).min(1, 'device_code is required.').max(512, 'device_code is too long.'),
  ...targetFields,
});

/**
 * Only unknown codes are counted and limited: a real device code is 256 random bits, so the limit
 * is about load from guessing, and must never hold up a device polling its own code.
 */
async function unknownDeviceCode(context: GrantContext): Promise<OAuthError> {
  // Counted and decided in one step (the count past the limit is the refused one).
  const counted = await context.services.rateLimits.unknownDeviceCode.hit(rateLimitKey(context.ip));
  if (counted.limited) return tooManyRequests(counted.retryAfter, 'Too many unknown device codes. Try again later.');
  return new OAuthError('invalid_grant', 'The device code is invalid.', { detail: 'unknown device code' });
}

/** The tokens an approved grant stands for, once the approving person is checked again. */
async function issuanceFor(context: GrantContext, grant: DeviceGrantRecord, now: number): Promise<IssueTokensInput> {
  const user = grant.userId === undefined ? undefined : await context.services.store.findUserById(grant.userId);
  if (!user || user.disabled) {
    throw new OAuthError('invalid_grant', 'The device code is invalid.', { detail: 'approving user missing or disabled' });
  }
  // Approved with a sign-in that has since been ended (a new password, revoke-tokens): no tokens.
  if (user.tokensRevokedAt !== undefined && (grant.decidedAt ?? 0) <= user.tokensRevokedAt) {
    throw new OAuthError('invalid_grant', 'The device code is invalid.', { detail: "approved before the user's tokens were revoked" });
  }
  return {
    dpopJkt: context.dpopJkt,
    client: context.client,
    user,
    // Set when the grant was made and approved; an approved grant changes only by being spent.
    scope: grant.scope,
    audience: grant.audience,
    authTime: grant.authTime ?? grant.decidedAt ?? now,
    amr: grant.amr,
    // As the confirmation page showed it: the device's own request.
    approval: { ip: grant.requesterIp, userAgent: grant.requesterUserAgent, sessionId: undefined },
  };
}

/** At most this many recoveries of one device code (a restart loop gives up long before). */
const recoveryLimit = 3;

/**
 * A spent code presented again by a device that may have lost the answer: redeemed with tokens,
 * within the retry window, and at least one poll interval after the redemption — polls racing each
 * other arrive together, and the loser's invalid_grant must not take the winner's tokens away. A
 * redemption answered to a DPoP proof is recovered only by a proof of the same key (`dpopJkt`, this
 * poll's): the lost tokens were bound to it, and the device that lost them still holds it.
 */
export function recoverable(grant: DeviceGrantRecord, now: number, retryWindow: number, dpopJkt: string | undefined): boolean {
  if (retryWindow <= 0 || grant.consumedAt === undefined || grant.accessTokenJti === undefined) return false;
  if (grant.dpopJkt !== undefined && grant.dpopJkt !== dpopJkt) return false;
  return now - (grant.issuedAt ?? grant.consumedAt) >= grant.interval && now - grant.consumedAt <= retryWindow;
}

/** Why a spent code presented again was not a recovery, for the log (the answer stays generic). */
function spentDetail(grant: DeviceGrantRecord, dpopJkt: string | undefined): string {
  if (grant.dpopJkt !== undefined && grant.dpopJkt !== dpopJkt) {
    return dpopJkt === undefined
      ? 'spent device code presented again without the DPoP proof it was redeemed with'
      : 'spent device code presented again with another DPoP key';
  }
  return 'spent device code presented again';
}

async function recover(context: GrantContext, grant: DeviceGrantRecord, now: number): Promise<TokenResponse> {
  const { store, config } = context.services;
  // The new tokens belong to the same sign-in: its refresh family, so that the lost token, should
  // it turn up in other hands, is reuse that revokes the family (RFC 9700 §4.14.2).
  const issuance = { ...(await issuanceFor(context, grant, now)), refreshFamilyId: grant.refreshFamilyId };
  const prepared = await prepareIssuance(context.services, issuance);
  const refresh = prepared.newRefreshToken && { token: prepared.newRefreshToken.record, guard: { userTokensRevokedAt: issuance.user.tokensRevokedAt } };
  const recovered = await store.recoverDeviceGrant(
    grant.id,
    { since: now - config.retryWindow, now, minGapSeconds: grant.interval, limit: recoveryLimit, dpopJkt: context.dpopJkt },
    { accessTokenJti: prepared.jti, ...(refresh ? { refresh } : {}) },
  );
  if (typeof recovered === 'string') {
    throw new OAuthError('invalid_grant', 'The device code has already been used.', { detail: `device code presented again: not recovered (${recovered})` });
  }
  if (refresh && !recovered.refreshTokenStored) throw signInEnded();
  audit(context, 'device_code.recovered', { clientId: context.client.clientId, userId: issuance.user.id });
  return finishIssuance(context.services, issuance, prepared);
}

export const deviceCodeGrant = {
  grantType: 'urn:ietf:params:oauth:grant-type:device_code',
  clientGrantType: 'device_code',
  params,
  async handle(context, { device_code, ...target }) {
    const { store, clock } = context.services;
    const nowMs = Math.floor(clock() * 1000);
    const grant = await context.services.devicePolls.poll(orderedSecretDigest(device_code, secretPrefix.deviceCode), context.client.clientId, nowMs);
    if (!grant) throw await unknownDeviceCode(context);
    if (grant.clientId !== context.client.clientId) {
      throw new OAuthError('invalid_grant', 'The device code is invalid.', { detail: 'device code of another client' });
    }
    // The grant's target was fixed by the device authorization request: a poll may name it again,
    // never another (RFC 8707 §2.2). Answered at once, whatever the person has decided so far.
    await accessTokenAudience(context.services, grant.audience, target);

    const decision = decidePoll(grant, nowMs);
    switch (decision.kind) {
      case 'spent':
        if (recoverable(grant, Math.floor(nowMs / 1000), context.services.config.retryWindow, context.dpopJkt)) {
          return recover(context, grant, Math.floor(nowMs / 1000));
        }
        throw new OAuthError('invalid_grant', 'The device code has already been used.', { detail: spentDetail(grant, context.dpopJkt) });
      case 'expired':
        // Counted once per grant: the first poll that finds it expired (the person never answered).
        if (grant.status === 'pending' && (grant.lastPolledAtMs ?? 0) < grant.expiresAt * 1000) {
          context.services.metrics.deviceAuthorizations.inc({ outcome: 'expired' });
        }
        throw new OAuthError('expired_token', 'The device code has expired. Start over with a new one.');
      case 'denied':
        throw new OAuthError('access_denied', 'The user denied the request.');
      case 'slow_down':
        throw new OAuthError('slow_down', `Polling too fast. Wait at least ${decision.newInterval} seconds between polls.`);
      case 'pending':
        throw new OAuthError('authorization_pending', 'The user has not yet approved the request.');
      case 'approved':
        break;
    }

    const issuance = await issuanceFor(context, grant, Math.floor(nowMs / 1000));
    let prepared: PreparedIssuance;
    try {
      prepared = await prepareIssuance(context.services, issuance);
    } catch (err) {
      // The roles allow nothing any more (invalid_scope): the code is spent all the same.
      await store.consumeDeviceGrant(grant.id, Math.floor(nowMs / 1000));
      throw err;
    }
    // One write: the grant spent and the refresh token stored, in one transaction.
    const refresh = prepared.newRefreshToken && { token: prepared.newRefreshToken.record, guard: { userTokensRevokedAt: issuance.user.tokensRevokedAt } };
    const redeemed = await store.redeemDeviceGrant(grant.id, Math.floor(nowMs / 1000), refresh, { accessTokenJti: prepared.jti, dpopJkt: context.dpopJkt });
    if (!redeemed) throw new OAuthError('invalid_grant', 'The device code has already been used.');
    // The person's sign-ins were ended while this redemption read the user (a new password racing it).
    if (refresh && !redeemed.refreshTokenStored) throw signInEnded();

    audit(context, 'token.issued', { grant: 'device_code', clientId: context.client.clientId, userId: issuance.user.id });
    return finishIssuance(context.services, issuance, prepared);
  },
} satisfies GrantHandler<z.infer<typeof params>>;
