/**
 * Client authentication at the token, device authorization, introspection and revocation
 * endpoints (RFC 6749 §2.3, §3.2.1). Public clients identify themselves with `client_id`;
 * confidential clients authenticate with client_secret_basic or client_secret_post (compared in
 * constant time against a stored digest, the previous secret too while a rotation's overlap
 * lasts), or with a JWT assertion: client_secret_jwt, or private_key_jwt for clients registered
 * with keys, which have no secret (oauth/client_assertion.ts). Using two methods at once is
 * invalid_request (RFC 6749 §2.3). A disabled client cannot authenticate at all.
 */
import { OAuthError } from '../errors.js';
import { constantTimeEqual, sha256 } from '../crypto/secrets.js';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret_box.js';
import type { ClientRecord, Store } from '../store/store.js';
import { jwtBearerAssertionType, verifyClientAssertion } from './client_assertion.js';
import { invalidClient } from './client_auth_errors.js';
import type { ClientOutbound } from './client_outbound.js';
import { audit, type AuditSource } from '../audit/audit_events.js';
import type { Services } from '../services.js';

export { invalidClient };

/** The client-authentication context of a request to one of this server's endpoints (`path`). */
export function clientAuthContext(request: AuditSource, services: Services, path: string): ClientAuthContext {
  return {
    store: services.store,
    secretBox: services.secretBox,
    issuer: services.config.issuer,
    clock: services.clock,
    endpoint: `${services.config.issuer}${path}`,
    onAssertionReplay: (clientId) => audit(request, 'client.assertion_replayed', { clientId }),
    outbound: services.outbound,
  };
}

export type ClientAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post' | 'client_assertion';

export interface ClientCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  method: ClientAuthMethod;
  /** The JWT of client_secret_jwt or private_key_jwt (method client_assertion). */
  assertion?: string;
}

/** What verifying a client needs beyond the store: the sealed secrets, this server's addresses, the time. */
export interface ClientAuthContext {
  store: Store;
  secretBox?: SecretBox;
  issuer?: string;
  clock?: Clock;
  /** Where the request was sent: an accepted `aud` of client assertions. */
  endpoint?: string;
  onAssertionReplay?: (clientId: string) => void;
  /** How a client's jwks_uri is fetched; default: guarded with no allow-list. */
  outbound?: ClientOutbound;
}

/** The client id a JWT assertion claims (its `sub`, else `iss`), read before anything is verified. */
function assertedClientId(assertion: string): string | undefined {
  const payload = assertion.split('.')[1];
  if (payload === undefined || payload.length > 8192) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown; iss?: unknown };
    const id = typeof claims.sub === 'string' ? claims.sub : claims.iss;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}

function decodeFormComponent(value: string): string {
  // RFC 6749 §2.3.1: id and secret are form-urlencoded before being joined for Basic.
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** Reads the credentials a request presents, without checking them. */
export function readClientCredentials(
  authorization: string | undefined,
  body: {
    client_id?: string | undefined;
    client_secret?: string | undefined;
    client_assertion?: string | undefined;
    client_assertion_type?: string | undefined;
  },
): ClientCredentials {
  if (body.client_assertion !== undefined || body.client_assertion_type !== undefined) {
    if ((authorization !== undefined && /^basic /i.test(authorization)) || body.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Use only one client authentication method.');
    }
    if (body.client_assertion_type !== jwtBearerAssertionType) throw invalidClient('unsupported client_assertion_type');
    if (body.client_assertion === undefined || body.client_assertion === '') throw invalidClient('client_assertion missing');
    const clientId = assertedClientId(body.client_assertion);
    if (clientId === undefined) throw invalidClient('client assertion names no client');
    // RFC 7523 §3: client_id is optional, but when sent it must be the client the assertion is about.
    if (body.client_id !== undefined && body.client_id !== clientId) {
      throw new OAuthError('invalid_request', 'client_id does not match the authenticated client.');
    }
    return { clientId, clientSecret: undefined, method: 'client_assertion', assertion: body.client_assertion };
  }
  if (authorization !== undefined && /^basic /i.test(authorization)) {
    if (body.client_secret !== undefined) {
      throw new OAuthError('invalid_request', 'Use only one client authentication method.');
    }
    let decoded: string;
    try {
      decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    } catch {
      throw invalidClient('undecodable basic credentials');
    }
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidClient('basic credentials without a colon');
    let clientId: string;
    let clientSecret: string;
    try {
      clientId = decodeFormComponent(decoded.slice(0, colon));
      clientSecret = decodeFormComponent(decoded.slice(colon + 1));
    } catch {
      throw invalidClient('basic credentials are not form-urlencoded');
    }
    if (body.client_id !== undefined && body.client_id !== clientId) {
      throw new OAuthError('invalid_request', 'client_id does not match the authenticated client.');
    }
    return { clientId, clientSecret, method: 'client_secret_basic' };
  }
  if (body.client_secret !== undefined) {
    return { clientId: body.client_id, clientSecret: body.client_secret, method: 'client_secret_post' };
  }
  return { clientId: body.client_id, clientSecret: undefined, method: 'none' };
}

/** Whether `secret` is the client's secret, or its previous one while the rotation overlap lasts. */
function secretMatches(client: ClientRecord, secret: string, now: number): boolean {
  const digest = sha256(secret);
  // Both compared, whatever the first says: the time taken does not tell which matched.
  const current = client.secretHash !== undefined && constantTimeEqual(digest, client.secretHash);
  const previous =
    client.previousSecretHash !== undefined &&
    client.previousSecretExpiresAt !== undefined &&
    now < client.previousSecretExpiresAt &&
    constantTimeEqual(digest, client.previousSecretHash);
  return current || previous;
}

/** Authenticates the client or throws invalid_client (401 with a Basic challenge). */
export async function authenticateClient(context: ClientAuthContext, credentials: ClientCredentials): Promise<ClientRecord> {
  if (credentials.clientId === undefined || credentials.clientId === '') {
    throw new OAuthError('invalid_request', 'client_id is required.');
  }
  const client = await context.store.findClient(credentials.clientId);
  if (!client) throw invalidClient(`unknown client ${credentials.clientId.slice(0, 128)}`);
  if (client.disabled) throw invalidClient(`disabled client ${client.clientId}`);
  const now = Math.floor((context.clock ?? (() => Date.now() / 1000))());
  const hasKeys = client.jwks !== undefined || client.jwksUri !== undefined;

  if (credentials.method === 'client_assertion') {
    if (client.secretHash === undefined && !hasKeys) throw invalidClient('client assertion from a public client');
    if (context.issuer === undefined) throw invalidClient('client assertions are not accepted here');
    await verifyClientAssertion(
      {
        store: context.store,
        secretBox: context.secretBox,
        issuer: context.issuer,
        clock: context.clock ?? (() => Date.now() / 1000),
        endpoint: context.endpoint ?? `${context.issuer}/oauth/token`,
        ...(context.onAssertionReplay ? { onReplay: context.onAssertionReplay } : {}),
        ...(context.outbound ? { outbound: context.outbound } : {}),
      },
      client,
      credentials.assertion ?? '',
    );
    return client;
  }
  // A client registered with keys proves itself with them, never with a shared secret.
  if (hasKeys) throw invalidClient('client registered for private_key_jwt sent no client assertion');
  if (client.secretHash === undefined) {
    // Some client libraries send an empty secret for public clients: that is no secret at all.
    if (credentials.clientSecret !== undefined && credentials.clientSecret !== '') throw invalidClient('secret presented by a public client');
    return client;
  }
  if (credentials.clientSecret === undefined) throw invalidClient('confidential client sent no secret');
  if (!secretMatches(client, credentials.clientSecret, now)) throw invalidClient('wrong client secret');
  return client;
}

export function requireGrantType(client: ClientRecord, grantType: ClientRecord['grantTypes'][number]): void {
  if (!client.grantTypes.includes(grantType)) {
    throw new OAuthError('unauthorized_client', `This client is not allowed to use the ${grantType} grant.`);
  }
}
