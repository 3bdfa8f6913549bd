/**
 * Client credentials an operator hands out: secrets — kept as a digest for
 * client_secret_basic/post and sealed for client_secret_jwt, whose HMAC needs the secret itself —
 * and public keys for private_key_jwt (RFC 7523), as an https JWKS address or a stored key set.
 */
import { readFile } from 'node:fs/promises';
import { randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import type { SecretBox } from '../crypto/secret_box.js';
import type { ClientRecord } from '../store/store.js';
import { clientSecretContext } from '../oauth/client_secret.js';
import { isLoopbackHost } from '../oauth/redirect.js';
import { AdminInputError } from './validation.js';

/** The fields of a client that authenticates with neither keys nor a rotated secret, enabled, made by an operator (not registered), not held to PAR. */
export const plainClientFields = {
  jwksUri: undefined,
  jwks: undefined,
  secretSealed: undefined,
  previousSecretHash: undefined,
  previousSecretSealed: undefined,
  previousSecretExpiresAt: undefined,
  disabled: false,
  registrationAccessTokenHash: undefined,
  tokenEndpointAuthMethod: undefined,
  requirePar: false,
  managedBy: undefined,
} as const satisfies Partial<ClientRecord>;

export interface NewClientSecret {
  /** Shown once, never stored. */
  secret: string;
  hash: string;
  /** Only for clients allowed client_secret_jwt: the HMAC needs the secret itself, so it is kept (sealed). */
  sealed: string | undefined;
}

/**
 * A new client secret. Only its digest is kept, unless the client may use client_secret_jwt
 * (`forSecretJwt`): that method needs the secret itself, so a sealed copy is kept too — a
 * weaker protection at rest (the secret key opens it) that only such clients pay for.
 */
export function newClientSecret(box: SecretBox, clientId: string, forSecretJwt: boolean): NewClientSecret {
  const secret = randomSecret(secretPrefix.clientSecret);
  return { secret, hash: sha256(secret), sealed: forSecretJwt ? box.seal(clientSecretContext(clientId), secret) : undefined };
}

/** How long `rotate-secret --keep-old-for` may keep the old secret working: 30 days at most. */
export const maxSecretOverlapSeconds = 30 * 86400;

export function validSecretOverlap(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  if (!/^\d{1,9}$/.test(value)) throw new AdminInputError('--keep-old-for must be a whole number of seconds');
  const seconds = Number(value);
  if (seconds > maxSecretOverlapSeconds) throw new AdminInputError(`--keep-old-for must be at most ${maxSecretOverlapSeconds} seconds (30 days)`);
  return seconds;
}

/** https, or http to a loopback host (development); no credentials, no fragment. */
export function validJwksUri(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AdminInputError(`"${value.slice(0, 80)}" is not an absolute URL`);
  }
  if (value.length > 2048) throw new AdminInputError('--jwks-uri must be at most 2048 characters');
  if (url.hash !== '' || value.includes('#')) throw new AdminInputError('--jwks-uri must not have a fragment');
  if (url.username !== '' || url.password !== '') throw new AdminInputError('--jwks-uri must not carry credentials');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (isLoopbackHost(url.hostname) || url.hostname === '[::1]'))) {
    throw new AdminInputError('--jwks-uri must be https (or http to a loopback address)');
  }
  return value;
}

/** Private key members of RFC 7518 §6: a key set holding one of them would leak a private key. */
const privateMembers = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const signingKeyTypes = new Set(['RSA', 'EC', 'OKP']);

/** A JWK Set of public signing keys (at most 20), as stored; throws AdminInputError otherwise. */
export function validJwks(text: string): { keys: Record<string, unknown>[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AdminInputError('the JWKS is not valid JSON');
  }
  const keys = typeof parsed === 'object' && parsed !== null && 'keys' in parsed ? parsed.keys : undefined;
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray(keys) || keys.length === 0) {
    throw new AdminInputError('the JWKS must be a JSON object with a non-empty "keys" array (RFC 7517 §5)');
  }
  if (keys.length > 20) throw new AdminInputError('the JWKS may hold at most 20 keys');
  for (const key of keys as unknown[]) {
    if (typeof key !== 'object' || key === null || Array.isArray(key)) throw new AdminInputError('every key of the JWKS must be a JSON object');
    const jwk = key as Record<string, unknown>;
    if (privateMembers.some((member) => member in jwk))
      throw new AdminInputError('the JWKS holds private or symmetric key material: give the public keys only');
    if (typeof jwk.kty !== 'string' || !signingKeyTypes.has(jwk.kty)) throw new AdminInputError('every key must be an RSA, EC or OKP public key');
    if (jwk.use !== undefined && jwk.use !== 'sig') throw new AdminInputError('a key with "use" other than "sig" cannot sign client assertions');
  }
  return { keys: keys as Record<string, unknown>[] };
}

export async function readJwksFile(path: string): Promise<{ keys: Record<string, unknown>[] }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new AdminInputError(`cannot read --jwks-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (text.length > 64 * 1024) throw new AdminInputError('--jwks-file is larger than 64 KiB');
  return validJwks(text);
}
