/**
 * Pushed Authorization Requests (RFC 9126): the request_uri handed out by POST /oauth/par and
 * redeemed by /authorize. Its random part (256 bits) is kept only as a digest; a request_uri is
 * single use, lives 60 seconds (§2.2 suggests 5 to 600) and belongs to the client that pushed it,
 * and /authorize then uses only the pushed parameters (§4).
 */
import { randomSecret, sha256 } from '../crypto/secrets.js';
import type { PushedRequestRecord, Store } from '../store/store.js';

/** RFC 9126 §2.2: the URN namespace of request_uri values issued by an authorization server. */
export const requestUriPrefix = 'urn:ietf:params:oauth:request_uri:';

/** Seconds a pushed request can be redeemed: enough for a redirect, short against capture. */
export const pushedRequestLifetime = 60;

/** The pushed parameters (as JSON) are refused beyond this size: the request travels sealed later. */
export const maxPushedParametersLength = 16 * 1024;

/** The parameters that authenticate the client at POST /oauth/par: never stored, never part of the request. */
const clientAuthenticationFields = new Set(['client_secret', 'client_assertion', 'client_assertion_type']);

/** randomSecret's 32 bytes in base64url. */
const randomPartPattern = /^[A-Za-z0-9_-]{43}$/;

/** Whether a query's request_uri is one of ours to redeem (a string in the RFC 9126 namespace). */
export function isPushedRequestUri(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(requestUriPrefix);
}

/** A new request_uri and the digest it is stored under. */
export function newRequestUri(): { requestUri: string; requestHash: string } {
  const random = randomSecret();
  return { requestUri: `${requestUriPrefix}${random}`, requestHash: sha256(random) };
}

/** The digest a request_uri is stored under, or undefined when it cannot be one of ours. */
export function requestHashOf(requestUri: string): string | undefined {
  if (!requestUri.startsWith(requestUriPrefix)) return undefined;
  const random = requestUri.slice(requestUriPrefix.length);
  return randomPartPattern.test(random) ? sha256(random) : undefined;
}

/**
 * The authorization request in a pushed body: every field but the client's credentials, with the
 * authenticated client's id as client_id (RFC 9126 §2.1; it may have come in a Basic header).
 */
export function pushedParameters(fields: Record<string, string>, clientId: string): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) if (!clientAuthenticationFields.has(name)) parameters[name] = value;
  parameters.client_id = clientId;
  return parameters;
}

export type RedeemedPushedRequest = { kind: 'pushed'; parameters: Record<string, string> } | { kind: 'refused'; message: string; reason: string };

/**
 * Redeems the request_uri of an /authorize query (one of ours, see isPushedRequestUri): once, in
 * time, and only with the client_id of the client that pushed it. Any failure is an error page
 * for the caller: with nothing redeemed, no redirect_uri is known to be the client's.
 */
export async function redeemPushedRequest(store: Store, query: Record<string, unknown>, requestUri: string, now: number): Promise<RedeemedPushedRequest> {
  const clientId = query.client_id;
  if (typeof clientId !== 'string' || clientId === '' || clientId.length > 256) {
    return { kind: 'refused', message: 'The request names no application (client_id is missing).', reason: 'request_uri without a valid client_id' };
  }
  const requestHash = requestHashOf(requestUri);
  if (requestHash === undefined) return { kind: 'refused', message: 'The request’s request_uri is malformed.', reason: 'malformed request_uri' };
  const record: PushedRequestRecord | undefined = await store.usePushedRequest(requestHash, clientId, now);
  if (record === undefined) {
    return {
      kind: 'refused',
      message: 'This sign-in link has expired or was already used. Go back to the application and start again.',
      reason: 'request_uri unknown, used, expired or pushed by another client',
    };
  }
  // The pushed parameters alone, whatever else the query says (RFC 9126 §4).
  return { kind: 'pushed', parameters: { ...record.parameters, client_id: record.clientId } };
}
