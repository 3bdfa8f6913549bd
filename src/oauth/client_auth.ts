/**
 * Client authentication at the token and device authorization endpoints (RFC 6749 §2.3, §3.2.1).
 * Public clients identify themselves with `client_id`; confidential clients authenticate with
 * client_secret_basic or client_secret_post, compared in constant time against a stored digest.
 * Using two methods at once is invalid_request (RFC 6749 §2.3).
 */
import { OAuthError } from '../errors.js';
import { constantTimeEqual, sha256 } from '../crypto/secrets.js';
import type { ClientRecord, Store } from '../store/store.js';

export interface ClientCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  method: 'none' | 'client_secret_basic' | 'client_secret_post';
}

const basicChallenge = { 'www-authenticate': 'Basic realm="latchkey", charset="UTF-8"' };

/** RFC 6749 §5.2 requires the challenge when Basic was tried; it is sent always, as a hint. */
export function invalidClient(detail: string): OAuthError {
  return new OAuthError('invalid_client', 'Client authentication failed.', { detail, headers: basicChallenge });
}

function decodeFormComponent(value: string): string {
  // RFC 6749 §2.3.1: id and secret are form-urlencoded before being joined for Basic.
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** Reads the credentials a request presents, without checking them. */
export function readClientCredentials(
  authorization: string | undefined,
  body: { client_id?: string | undefined; client_secret?: string | undefined },
): ClientCredentials {
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

/** Authenticates the client or throws invalid_client (401 with a Basic challenge). */
export async function authenticateClient(store: Store, credentials: ClientCredentials): Promise<ClientRecord> {
  if (credentials.clientId === undefined || credentials.clientId === '') {
    throw new OAuthError('invalid_request', 'client_id is required.');
  }
  const client = await store.findClient(credentials.clientId);
  if (!client) throw invalidClient(`unknown client ${credentials.clientId.slice(0, 128)}`);
  if (client.secretHash === undefined) {
    // Some client libraries send an empty secret for public clients: that is no secret at all.
    if (credentials.clientSecret !== undefined && credentials.clientSecret !== '') throw invalidClient('secret presented by a public client');
    return client;
  }
  if (credentials.clientSecret === undefined) throw invalidClient('confidential client sent no secret');
  if (!constantTimeEqual(sha256(credentials.clientSecret), client.secretHash)) {
    throw invalidClient('wrong client secret');
  }
  return client;
}

export function requireGrantType(client: ClientRecord, grantType: ClientRecord['grantTypes'][number]): void {
  if (!client.grantTypes.includes(grantType)) {
    throw new OAuthError('unauthorized_client', `This client is not allowed to use the ${grantType} grant.`);
  }
}
