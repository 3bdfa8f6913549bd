/**
 * Request objects passed by value (OIDC Core §6.1, §6.3; RFC 9101): the authorization request's
 * parameters as the claims of a JWT in `request`. Unsigned (`alg: none`) objects carry no more
 * trust than the query they replace, and Core allows them; signed ones are verified with a key
 * the client registered (its JWK Set, as for private_key_jwt) or, for a client that keeps its
 * secret for client_secret_jwt, with that secret (HS256/384/512). Encrypted objects are refused.
 *
 * A signed object that names an issuer must name the client, and an audience must include this
 * server; exp and nbf are honoured when present. The object's members replace the query's
 * parameters of the same name (Core §6.3.3); client_id and response_type, which OAuth requires in
 * the query, must agree with it. Problems are `invalid_request_object`.
 */
import { decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret_box.js';
import { OAuthError } from '../errors.js';
import type { ClientRecord } from '../store/store.js';
import { severalResources } from './audience.js';
import { asymmetricAlgorithms, clientSecretKeys, hmacAlgorithms, registeredKeySet } from './client_assertion.js';
import type { ClientOutbound } from './client_outbound.js';

/** Generous for any real request (a few hundred bytes of parameters), small enough to parse at once. */
export const maxRequestObjectLength = 16_384;

/** What a request object's signature may be, `none` included (Core §6.1). */
export const requestObjectAlgorithms = ['none', ...asymmetricAlgorithms, ...hmacAlgorithms];

export interface RequestObjectContext {
  issuer: string;
  clock: Clock;
  /** Opens client secrets kept for HMAC-signed objects; without it those are refused. */
  secretBox: SecretBox | undefined;
  /** How a jwks_uri is fetched (guarded for self-registered clients); default: guarded with no allow-list. */
  outbound?: ClientOutbound;
}

/** JWT claims that describe the object itself, not the authorization request. */
const envelopeClaims = new Set(['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub']);

const refused = (detail: string) => new OAuthError('invalid_request_object', 'The request object is invalid.', { detail });

function decodeUnsigned(jwt: string): JWTPayload {
  const [, body = '', signature] = jwt.split('.');
  if (signature !== '') throw refused('an unsigned request object carries a signature');
  try {
    const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new Error('not an object');
    return payload as JWTPayload;
  } catch {
    throw refused('unsigned request object payload is not a JSON object');
  }
}

async function verifySigned(context: RequestObjectContext, client: ClientRecord, jwt: string, alg: string): Promise<JWTPayload> {
  const options = { currentDate: new Date(context.clock() * 1000), clockTolerance: 30 };
  try {
    if (hmacAlgorithms.includes(alg)) {
      // A client registered with keys signs with them only, whatever secret it once had.
      if (client.jwks !== undefined || client.jwksUri !== undefined) throw refused('HMAC request object from a client registered with keys');
      let keys: Uint8Array[] = [];
      try {
        keys = clientSecretKeys(client, context.secretBox, Math.floor(context.clock()));
      } catch {
        keys = [];
      }
      if (keys.length === 0) throw refused('HMAC request object from a client without a kept secret');
      for (const key of keys) {
        try {
          return (await jwtVerify(jwt, key, { ...options, algorithms: hmacAlgorithms })).payload;
        } catch (err) {
          if ((err as { code?: string }).code !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw err;
        }
      }
      throw refused('request object signature does not verify');
    }
    const keys = registeredKeySet(client, context.outbound);
    if (!keys) throw refused('signed request object from a client without registered keys');
    return (await jwtVerify(jwt, keys, { ...options, algorithms: asymmetricAlgorithms })).payload;
  } catch (err) {
    if (err instanceof OAuthError) throw err;
    throw refused(`request object refused: ${(err as Error).message}`);
  }
}

/**
 * The authorization parameters a request object carries, as strings (a `claims` object becomes
 * its JSON text, numbers their decimal form), for `client`, whose id the query named.
 */
export async function openRequestObject(context: RequestObjectContext, client: ClientRecord, jwt: string): Promise<Record<string, string>> {
  if (jwt.length > maxRequestObjectLength) throw refused('request object too long');
  const parts = jwt.split('.');
  if (parts.length === 5) throw refused('encrypted request objects are not supported');
  if (parts.length !== 3) throw refused('request object is not a compact JWS');
  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch {
    throw refused('request object header is not readable');
  }
  if (alg === undefined || !requestObjectAlgorithms.includes(alg)) throw refused(`request object algorithm ${String(alg).slice(0, 16)} not accepted`);
  const payload = alg === 'none' ? decodeUnsigned(jwt) : await verifySigned(context, client, jwt, alg);

  if (alg !== 'none') {
    if (payload.iss !== undefined && payload.iss !== client.clientId) throw refused('request object iss is not the client');
    if (payload.aud !== undefined) {
      const audiences = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
      if (!audiences.includes(context.issuer) && !audiences.includes(`${context.issuer}/authorize`))
        throw refused('request object aud does not name this server');
    }
  }

  const parameters: Record<string, string> = {};
  for (const [name, value] of Object.entries(payload)) {
    if (envelopeClaims.has(name)) continue;
    // Core §6.1: a request object cannot point to another one.
    if (name === 'request' || name === 'request_uri') throw refused(`request object contains ${name}`);
    if (typeof value === 'string') parameters[name] = value;
    // RFC 8707 §2: several resources are a JSON array here; one in an array is just that one.
    else if (name === 'resource' && Array.isArray(value)) {
      if (value.length > 1) throw severalResources();
      const [only] = value as unknown[];
      if (typeof only !== 'string') throw refused('request object resource is not a string');
      parameters[name] = only;
    } else if (typeof value === 'number' || typeof value === 'boolean') parameters[name] = String(value);
    else if (name === 'claims' && typeof value === 'object' && value !== null) parameters[name] = JSON.stringify(value);
    else throw refused(`request object member ${name.slice(0, 64)} is not a string`);
  }
  if (parameters.client_id !== undefined && parameters.client_id !== client.clientId) throw refused('request object client_id differs from the query');
  return parameters;
}
