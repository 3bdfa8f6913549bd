/**
 * A client's DPoP key and its proofs (RFC 9449 §4.2) for tests: a key pair of its own, proofs for
 * one request (method, URL, the server's nonce, `ath` for an access token), signed at the clock
 * the test gives.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { createHash, randomUUID } from 'node:crypto';

export interface DpopKey {
  privateKey: CryptoKey;
  jwk: JWK;
  /** Its RFC 7638 thumbprint: what tokens bound to it carry as `cnf.jkt`. */
  jkt: string;
}

export async function newDpopKey(): Promise<DpopKey> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(pair.publicKey);
  return { privateKey: pair.privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

export interface ProofFor {
  htm: string;
  htu: string;
  /** Epoch seconds: the test's clock. */
  iat: number;
  nonce?: string | undefined;
  /** The access token the request presents (its hash goes into `ath`). */
  accessToken?: string | undefined;
}

export function dpopProof(key: DpopKey, request: ProofFor): Promise<string> {
  const claims: Record<string, unknown> = { htm: request.htm, htu: request.htu, jti: randomUUID(), iat: request.iat };
  if (request.nonce !== undefined) claims.nonce = request.nonce;
  if (request.accessToken !== undefined) claims.ath = createHash('sha256').update(request.accessToken).digest('base64url');
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk }).sign(key.privateKey);
}
