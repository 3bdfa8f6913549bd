/**
 * DPoP (RFC 9449): a client proves, with every request, possession of a private key; tokens issued
 * with a proof are bound to that key's thumbprint (`cnf.jkt`), so a copied token alone is useless.
 *
 * A proof (§4.3) is a JWT with typ `dpop+jwt`, an asymmetric alg and the public key in its `jwk`
 * header, signed with that key, whose `htm`/`htu` name this very request (the URL without query
 * and fragment), `iat` is recent, `jti` was never seen (a replay cache shared by every instance,
 * Store.useOnce), `ath` is the hash of the access token at resource endpoints, and — at the token
 * endpoint — `nonce` is one the server handed out (§8): nonces are stateless HMACs of a 5-minute
 * time step under a server secret, so any instance can check one; the current and the previous
 * step are accepted.
 */
import { calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, jwtVerify } from 'jose';
import { constantTimeEqual, hmacSha256, sha256 } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import type { Store } from '../store/store.js';

export const dpopAlgorithms = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA'];

/** How far a proof's iat may lie in the past, and in the future (clock skew). */
const maxProofAge = 300;
const maxProofFuture = 60;
const nonceStep = 300;
const maxProofLength = 8192;

export interface DpopContext {
  store: Store;
  /** The HMAC key of server nonces. */
  nonceKey: string;
  /** Epoch seconds (fractional). */
  clock: () => number;
}

export interface DpopRequest {
  proof: string;
  method: string;
  /** The request's URL as the client addressed it, without query or fragment. */
  url: string;
  /** At resource endpoints: the access token the proof must be bound to (`ath`). */
  accessToken?: string;
  /** The token endpoint requires a server nonce; resource endpoints do not. */
  requireNonce: boolean;
}

/** The nonce for a time step: what the DPoP-Nonce header hands out. */
function nonceFor(key: string, step: number): string {
  return hmacSha256(key, `dpop-nonce:${step}`).slice(0, 32);
}

export function dpopContext(services: { store: Store; dpopNonceKey: string; clock: () => number }): DpopContext {
  return { store: services.store, nonceKey: services.dpopNonceKey, clock: services.clock };
}

export function currentNonce(context: DpopContext): string {
  return nonceFor(context.nonceKey, Math.floor(context.clock() / nonceStep));
}

function nonceValid(context: DpopContext, nonce: unknown): boolean {
  if (typeof nonce !== 'string') return false;
  const step = Math.floor(context.clock() / nonceStep);
  // Both compared, whatever the first says.
  const current = constantTimeEqual(nonce, nonceFor(context.nonceKey, step));
  const previous = constantTimeEqual(nonce, nonceFor(context.nonceKey, step - 1));
  return current || previous;
}

/** RFC 9449 §7.1 / §8: what is wrong with a proof, as the endpoint's error. */
export class DpopError extends OAuthError {
  constructor(code: 'invalid_dpop_proof' | 'use_dpop_nonce', description: string, detail: string) {
    super(code, description, { detail });
  }
}

const bad = (detail: string) => new DpopError('invalid_dpop_proof', 'The DPoP proof is invalid.', detail);

/** The request's one DPoP header (RFC 9449 §4.3: exactly one), or undefined when it sent none. */
export function dpopHeader(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers.dpop;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.includes(',')) throw bad('more than one DPoP header');
  return value.trim();
}

/** `htu` compared as RFC 9449 §4.3 says: scheme and host case-insensitively, no query or fragment. */
function normalizedUrl(value: string): string | undefined {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return undefined;
  }
}

/** Verifies a proof for this request and spends its jti; the key's thumbprint (`jkt`), or a DpopError. */
export async function verifyDpopProof(context: DpopContext, request: DpopRequest): Promise<string> {
  if (request.proof.length > maxProofLength || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(request.proof)) throw bad('malformed proof');
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(request.proof);
  } catch {
    throw bad('undecodable proof header');
  }
  if (header.typ !== 'dpop+jwt') throw bad('typ is not dpop+jwt');
  if (typeof header.alg !== 'string' || !dpopAlgorithms.includes(header.alg)) throw bad('alg not accepted');
  const jwk = header.jwk;
  if (!jwk || typeof jwk !== 'object') throw bad('no jwk header');
  if (['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'].some((member) => member in jwk)) throw bad('jwk header holds private key material');

  let payload: Awaited<ReturnType<typeof jwtVerify>>['payload'];
  try {
    ({ payload } = await jwtVerify(request.proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: dpopAlgorithms }));
  } catch (err) {
    throw bad(`signature or claims refused: ${(err as Error).message}`);
  }
  if (payload.htm !== request.method) throw bad('htm does not match the request method');
  if (typeof payload.htu !== 'string' || normalizedUrl(payload.htu) !== normalizedUrl(request.url)) throw bad('htu does not match the request URL');
  const now = context.clock();
  const iat = payload.iat;
  if (typeof iat !== 'number' || iat < now - maxProofAge || iat > now + maxProofFuture) throw bad('iat outside the accepted window');
  if (typeof payload.jti !== 'string' || payload.jti === '' || payload.jti.length > 256) throw bad('jti missing or too long');
  if (request.accessToken !== undefined) {
    if (typeof payload.ath !== 'string' || !constantTimeEqual(payload.ath, sha256(request.accessToken))) throw bad('ath does not match the access token');
  }
  if (request.requireNonce && !nonceValid(context, payload.nonce)) {
    throw new DpopError(
      'use_dpop_nonce',
      'Resend the request with the DPoP nonce this server provided.',
      payload.nonce === undefined ? 'no nonce' : 'stale or unknown nonce',
    );
  }
  const jkt = await calculateJwkThumbprint(jwk, 'sha256');
  // One use per key and jti, for as long as the proof could still be accepted.
  if (!(await context.store.useOnce('dpop', `${jkt}:${payload.jti}`, Math.ceil(iat + maxProofAge + maxProofFuture)))) throw bad('jti replayed');
  return jkt;
}
