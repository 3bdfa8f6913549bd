/**
 * Compact JWS signing on the hot path with node:crypto directly (RFC 7515 §7.1). jose signs through
 * WebCrypto, which costs 3-4× more per ES256/EdDSA signature; the result is the same JWS, and jose
 * still verifies every token we issue.
 *
 * RS256 takes about 1 ms of CPU, so it is signed on libuv's thread pool and the event loop keeps
 * answering polls meanwhile (where there is more than one core). ES256 and EdDSA take tens of
 * microseconds, less than the hop to the thread pool, so they are signed in place.
 */
import { sign as cryptoSign, type KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { SigningAlgorithm } from '../store/store.js';

export interface JwsKey {
  alg: SigningAlgorithm;
  kid: string;
  privateKey: KeyObject;
}

function base64urlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** node:crypto's digest argument and key options for each JWS algorithm. */
function signatureParameters(key: JwsKey): { digest: string | null; key: KeyObject | { key: KeyObject; dsaEncoding: 'ieee-p1363' } } {
  switch (key.alg) {
    case 'RS256':
      return { digest: 'sha256', key: key.privateKey };
    case 'ES256':
      // JWS wants r||s (RFC 7518 §3.4), not the DER sequence OpenSSL produces by default.
      return { digest: 'sha256', key: { key: key.privateKey, dsaEncoding: 'ieee-p1363' } };
    case 'EdDSA':
      return { digest: null, key: key.privateKey };
  }
}

function signingInput(key: JwsKey, payload: object, typ: string): string {
  return `${base64urlJson({ alg: key.alg, kid: key.kid, typ })}.${base64urlJson(payload)}`;
}

/** Signs on the calling thread (the bench's raw signing rate, and the fast algorithms). */
export function signJwsSync(key: JwsKey, payload: object, typ: string): string {
  const input = signingInput(key, payload, typ);
  const parameters = signatureParameters(key);
  return `${input}.${cryptoSign(parameters.digest, Buffer.from(input), parameters.key).toString('base64url')}`;
}

/**
 * With one core to run on (availableParallelism honours the process's CPU affinity: taskset, a
 * container's cpuset; not a CPU quota), the thread pool adds no parallelism, only two thread
 * switches per signature: RS256 is then signed in place too (a tenth more issuances a second there).
 */
const rsaOnThreadPool = availableParallelism() > 1;

export async function signJws(key: JwsKey, payload: object, typ: string): Promise<string> {
  if (key.alg !== 'RS256' || !rsaOnThreadPool) return signJwsSync(key, payload, typ);
  const input = signingInput(key, payload, typ);
  const parameters = signatureParameters(key);
  const signature = await new Promise<Buffer>((resolve, reject) =>
    cryptoSign(parameters.digest, Buffer.from(input), parameters.key, (err, result) => (err ? reject(err) : resolve(result))),
  );
  return `${input}.${signature.toString('base64url')}`;
}
