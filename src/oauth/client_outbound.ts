/**
 * Requests the server sends to addresses a client registered — Back-Channel Logout 1.0 §2.5 POSTs
 * to its `backchannel_logout_uri`, and its `jwks_uri` for private_key_jwt (RFC 7523 §3) and signed
 * request objects (OIDC Core §6.3.2) — all go through net/outbound_guard.ts. A client that
 * registered itself (RFC 7591) names whatever address it likes, so its requests reach public
 * addresses only, or what the operator allow-listed (LATCHKEY_OUTBOUND_ALLOW), judged on the
 * address connected to. A client the operator made (`clients add`, the console) may name internal
 * hosts: the operator chose them.
 */
import { outboundFetch, type OutboundFetch } from '../net/outbound_guard.js';
import { emptyAllowList, literalTargetRefusal, type OutboundAllowList } from '../net/outbound_policy.js';
import type { ClientRecord } from '../store/store.js';

export interface ClientOutbound {
  /** For clients that registered themselves: public addresses and the allow-list only. */
  readonly guarded: OutboundFetch;
  /** For clients the operator made: same deadline, size cap and no redirects, any address. */
  readonly trusted: OutboundFetch;
}

export function clientOutbound(allow: OutboundAllowList): ClientOutbound {
  return Object.freeze({ guarded: outboundFetch({ allow }), trusted: outboundFetch({ allow: undefined }) });
}

/** What a caller that was handed no configuration uses: the guard with an empty allow-list. */
export const defaultClientOutbound = clientOutbound(emptyAllowList);

/** Whether the client registered itself at the registration endpoint (RFC 7591) rather than being made by the operator. */
export function isSelfRegistered(client: Pick<ClientRecord, 'registrationAccessTokenHash'>): boolean {
  return client.registrationAccessTokenHash !== undefined;
}

/** The fetch that requests addresses this client registered. */
export function outboundFor(outbound: ClientOutbound, client: Pick<ClientRecord, 'registrationAccessTokenHash'>): OutboundFetch {
  return isSelfRegistered(client) ? outbound.guarded : outbound.trusted;
}

/** Why a self-registered client may not name this URL as a server-side target, or undefined (see literalTargetRefusal). */
export function registeredTargetRefusal(uri: string, allow: OutboundAllowList): string | undefined {
  return literalTargetRefusal(new URL(uri), allow);
}
