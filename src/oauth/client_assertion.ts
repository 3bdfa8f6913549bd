/**
 * JWT client authentication (RFC 7523 §2.2, §3; OIDC Core §9): `private_key_jwt`, signed with a
 * key the client registered (a JWK Set stored, or fetched from its https jwks_uri and cached — through
 * the outbound guard, so a client that registered itself cannot make the server fetch an internal
 * address: client_outbound.ts), and
 * `client_secret_jwt`, an HMAC under the client secret (which is why secrets are also kept sealed).
 *
 * The assertion must name the client as `iss` and `sub`, this server as `aud` (its issuer, its
 * token endpoint, or the endpoint it was sent to), carry a `jti` and expire soon: `exp` at most
 * ten minutes ahead. Each `jti` is accepted once until the assertion expires, across every
 * instance (Store.useOnce), so a captured assertion cannot be replayed.
 */
import { createLocalJWKSet, createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { clientSecretContext } from './client_secret.js';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret_box.js';
import type { OutboundFetch } from '../net/outbound_guard.js';
import type { ClientRecord, Store } from '../store/store.js';
import { invalidClient } from './client_auth_errors.js';
import { defaultClientOutbound, outboundFor, type ClientOutbound } from './client_outbound.js';

export const jwtBearerAssertionType = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export const asymmetricAlgorithms = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
export const hmacAlgorithms = ['HS256', 'HS384', 'HS512'];

/** How far ahead an assertion may expire: it is made for one request. */
export const maxAssertionLifetime = 600;
const clockSkew = 30;
const maxAssertionLength = 8192;

export interface AssertionContext {
  store: Store;
  secretBox: SecretBox | undefined;
  issuer: string;
  clock: Clock;
  /** Where the request was sent (the token, introspection, revocation or device endpoint). */
  endpoint: string;
  /** Told about a replayed assertion (an attack or a broken client), for the audit log. */
  onReplay?: (clientId: string) => void;
  /** How a jwks_uri is fetched; default: guarded with no allow-list. */
  outbound?: ClientOutbound;
}

export type AssertionMethod = 'private_key_jwt' | 'client_secret_jwt';

/**
 * Remote key sets by the fetch that reads them and by address: jose caches the keys (10 minutes)
 * and refetches for an unknown kid at most every 30 s. A guarded and a trusted fetch of one address
 * are kept apart, so keys fetched for an operator's client never serve a self-registered one.
 */
const remoteKeySets = new WeakMap<OutboundFetch, Map<string, JWTVerifyGetKey>>();

function remoteKeySet(uri: string, send: OutboundFetch): JWTVerifyGetKey {
  let sets = remoteKeySets.get(send);
  if (!sets) remoteKeySets.set(send, (sets = new Map<string, JWTVerifyGetKey>()));
  let keys = sets.get(uri);
  if (!keys) {
    if (sets.size >= 1000) sets.clear();
    keys = createRemoteJWKSet(new URL(uri), { timeoutDuration: 5000, cooldownDuration: 30_000, cacheMaxAge: 600_000, [customFetch]: send });
    sets.set(uri, keys);
  }
  return keys;
}

/** The HMAC keys a client_secret_jwt (or a request object) may be made with: the secret, and the previous one while it still works. */
export function clientSecretKeys(client: ClientRecord, box: SecretBox | undefined, now: number): Uint8Array[] {
  if (!box) return [];
  const sealed = [client.secretSealed];
  if (client.previousSecretExpiresAt !== undefined && now < client.previousSecretExpiresAt) sealed.push(client.previousSecretSealed);
  try {
    return sealed.filter((s): s is string => s !== undefined).map((s) => new TextEncoder().encode(box.open(clientSecretContext(client.clientId), s)));
  } catch {
    // A sealed secret that does not open (another key, altered): this client cannot use the method.
    throw invalidClient('client secret for client_secret_jwt does not open');
  }
}

/** The key that spends a jti: the client's id and the jti, unambiguous and free of U+0000 (PostgreSQL text cannot hold it). */
export function assertionReplayKey(clientId: string, jti: string): string {
  return `${clientId.length}:${clientId}:${jti}`;
}

/** The public keys the client registered (a stored JWK Set or its jwks_uri); throws when the stored set is unusable. */
export function registeredKeySet(client: ClientRecord, outbound: ClientOutbound = defaultClientOutbound): JWTVerifyGetKey | undefined {
  if (client.jwks !== undefined) return createLocalJWKSet(client.jwks);
  return client.jwksUri !== undefined ? remoteKeySet(client.jwksUri, outboundFor(outbound, client)) : undefined;
}

/** Verifies the assertion for `client`, spends its jti, and says which method it was; else invalid_client. */
export async function verifyClientAssertion(context: AssertionContext, client: ClientRecord, assertion: string): Promise<AssertionMethod> {
  if (assertion.length > maxAssertionLength) throw invalidClient('client assertion too long');
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(assertion).alg;
  } catch {
    throw invalidClient('client assertion is not a JWS');
  }
  const now = Math.floor(context.clock());
  const options = {
    issuer: client.clientId,
    subject: client.clientId,
    audience: [...new Set([context.issuer, `${context.issuer}/oauth/token`, context.endpoint])],
    currentDate: new Date(context.clock() * 1000),
    clockTolerance: clockSkew,
    requiredClaims: ['exp', 'jti'],
  };

  let payload: JWTPayload | undefined;
  let method: AssertionMethod;
  if (alg !== undefined && hmacAlgorithms.includes(alg)) {
    // A client registered with keys proves itself with them only, whatever secret it once had.
    if (client.jwks !== undefined || client.jwksUri !== undefined) throw invalidClient('client_secret_jwt from a client registered for private_key_jwt');
    method = 'client_secret_jwt';
    const keys = clientSecretKeys(client, context.secretBox, now);
    if (keys.length === 0) throw invalidClient('client_secret_jwt from a client without a sealed secret');
    for (const key of keys) {
      try {
        payload = (await jwtVerify(assertion, key, { ...options, algorithms: hmacAlgorithms })).payload;
        break;
      } catch (err) {
        if (!isSignatureFailure(err)) throw invalidClient(`client assertion refused: ${(err as Error).message}`);
      }
    }
    if (!payload) throw invalidClient('client assertion signature does not verify');
  } else if (alg !== undefined && asymmetricAlgorithms.includes(alg)) {
    method = 'private_key_jwt';
    let keys: JWTVerifyGetKey | undefined;
    try {
      keys = registeredKeySet(client, context.outbound);
    } catch {
      throw invalidClient("the client's registered key set is not usable");
    }
    if (!keys) throw invalidClient('private_key_jwt from a client without registered keys');
    try {
      payload = (await jwtVerify(assertion, keys, { ...options, algorithms: asymmetricAlgorithms })).payload;
    } catch (err) {
      throw invalidClient(`client assertion refused: ${(err as Error).message}`);
    }
  } else {
    throw invalidClient(`client assertion algorithm ${String(alg).slice(0, 16)} not accepted`);
  }

  // One audience only: an assertion naming several servers could be replayed at the others.
  if (Array.isArray(payload.aud) && payload.aud.length !== 1) throw invalidClient('client assertion with several audiences');
  const exp = Number(payload.exp);
  if (exp > now + maxAssertionLifetime + clockSkew) throw invalidClient('client assertion expires too far ahead');
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti === '' || jti.length > 256) throw invalidClient('client assertion jti missing or too long');
  if (!(await context.store.useOnce('client_assertion', assertionReplayKey(client.clientId, jti), exp + clockSkew))) {
    context.onReplay?.(client.clientId);
    throw invalidClient('client assertion jti replayed');
  }
  return method;
}

function isSignatureFailure(err: unknown): boolean {
  return (err as { code?: string }).code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED';
}
