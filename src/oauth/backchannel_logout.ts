/**
 * OIDC Back-Channel Logout 1.0: when a browser session ends, every client registered with a
 * `backchannel_logout_uri` that was issued a code in that session hears of it — a logout token
 * (typ logout+jwt, §2.4: iss, aud, iat, exp, jti, events, sub and sid; never a nonce) POSTed as
 * `logout_token` (§2.5). Sent in the background, so the person's page never waits on a client;
 * each delivery gets a few tries with growing pauses and a deadline per try, and its outcome is
 * audited. The clients' answers are not read beyond their status. Deliveries go through the
 * outbound guard (client_outbound.ts): a client that registered itself is never POSTed to at an
 * internal address, and such a refusal is not retried.
 */
import { randomId } from '../crypto/secrets.js';
import { epochSeconds } from '../clock.js';
import { audit, type AuditSource } from '../audit/audit_events.js';
import { OutboundRefused, type OutboundFetch } from '../net/outbound_guard.js';
import type { Services } from '../services.js';
import type { SessionRecord } from '../store/store.js';
import { outboundFor } from './client_outbound.js';

export const backchannelLogoutEvent = 'http://schemas.openid.net/event/backchannel-logout';
/** Pauses before the second and third try (ms); the first is at once. */
export const retryPausesMs = [1000, 4000];
const attemptTimeoutMs = 5000;
/** A logout token is for this delivery only: short-lived (§2.4 leaves the lifetime to the OP). */
const logoutTokenLifetime = 120;

export interface BackchannelDelivery {
  clientId: string;
  delivered: boolean;
  attempts: number;
}

/** Tells the clients of each ended session without waiting (the person's page never waits for a client). */
export function notifyBackchannelLogoutLater(
  services: Services,
  sessions: readonly Pick<SessionRecord, 'userId' | 'id'>[],
  source: AuditSource & { log: { error(o: object, m: string): void } },
): void {
  for (const session of sessions) {
    void notifyBackchannelLogout(services, session, source).catch((err: unknown) => source.log.error({ err }, 'back-channel logout failed'));
  }
}

/** The logout token for one client and one session. */
export async function logoutToken(services: Services, clientId: string, session: Pick<SessionRecord, 'userId' | 'id'>): Promise<string> {
  const now = epochSeconds(services.clock);
  return services.signer.signLogoutToken({
    iss: services.config.issuer,
    aud: clientId,
    iat: now,
    exp: now + logoutTokenLifetime,
    jti: randomId(),
    sub: session.userId,
    sid: session.id,
    events: { [backchannelLogoutEvent]: {} },
  });
}

type Attempt = { kind: 'delivered' } | { kind: 'failed' } | { kind: 'refused'; reason: string };

async function deliverOnce(send: OutboundFetch, uri: string, token: string): Promise<Attempt> {
  try {
    const res = await send(uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-store' },
      body: new URLSearchParams({ logout_token: token }),
      signal: AbortSignal.timeout(attemptTimeoutMs),
    });
    // §2.8: 200 (or 204) is success; 400 means the RP refused this token and a retry will not help.
    return res.status === 200 || res.status === 204 ? { kind: 'delivered' } : { kind: 'failed' };
  } catch (err) {
    // Where the URI leads will not change between tries: an internal address is refused at once.
    return err instanceof OutboundRefused ? { kind: 'refused', reason: err.message } : { kind: 'failed' };
  }
}

/**
 * Tells every client of the session that it ended; resolves when every delivery is done (callers
 * that must not wait just do not await it). `sleep` is injectable for tests.
 */
export async function notifyBackchannelLogout(
  services: Services,
  session: Pick<SessionRecord, 'userId' | 'id'>,
  source: AuditSource,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<BackchannelDelivery[]> {
  const clientIds = await services.store.clientsOfSession(session.id);
  const deliveries: Promise<BackchannelDelivery>[] = [];
  for (const clientId of clientIds) {
    const client = await services.store.findClient(clientId);
    const uri = client?.backchannelLogoutUri;
    if (!client || !uri) continue;
    const send = outboundFor(services.outbound, client);
    deliveries.push(
      (async () => {
        const token = await logoutToken(services, clientId, session);
        let attempts = 0;
        for (const pause of [0, ...retryPausesMs]) {
          if (pause > 0) await sleep(pause);
          attempts += 1;
          const attempt = await deliverOnce(send, uri, token);
          if (attempt.kind === 'delivered') {
            audit(source, 'logout.backchannel_delivered', { clientId, userId: session.userId, attempts });
            return { clientId, delivered: true, attempts };
          }
          if (attempt.kind === 'refused') {
            audit(source, 'logout.backchannel_failed', { clientId, userId: session.userId, attempts, refused: attempt.reason });
            return { clientId, delivered: false, attempts };
          }
        }
        audit(source, 'logout.backchannel_failed', { clientId, userId: session.userId, attempts });
        return { clientId, delivered: false, attempts };
      })(),
    );
  }
  return Promise.all(deliveries);
}
