/**
 * Signing keys: generation and the public JWK of each. Private keys are kept as PKCS#8 PEM in the
 * store (they must be usable to sign); only public JWKs leave the server.
 */
import { generateKeyPairSync, createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';
import type { PublicJwk, SigningAlgorithm } from '../store/store.js';

/** RS256 for the widest compatibility (and every id_token); ES256 and EdDSA sign 20× faster. */
export const signingAlgorithms = ['RS256', 'ES256', 'EdDSA'] as const satisfies readonly SigningAlgorithm[];
/** The type lives with the signing key record (store/store.ts), below this layer; named here beside the list. */
export type { SigningAlgorithm };

/** OIDC Core §15.1: RS256 is the one algorithm every relying party can verify id_tokens with. */
export const idTokenAlgorithm: SigningAlgorithm = 'RS256';

export interface GeneratedKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKeyPem: string;
  publicJwk: PublicJwk;
}

function generatePrivateKey(alg: SigningAlgorithm): KeyObject {
  switch (alg) {
    case 'RS256':
      return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    case 'ES256':
      return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    case 'EdDSA':
      return generateKeyPairSync('ed25519').privateKey;
  }
}

export function generateSigningKey(alg: SigningAlgorithm = 'RS256'): GeneratedKey {
  const privateKey = generatePrivateKey(alg);
  const kid = randomBytes(12).toString('base64url');
  return {
    kid,
    alg,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicJwk: publicJwkOf(privateKey, kid, alg),
  };
}

/** Only the public members, in a fixed order, whatever the key type. */
export function publicJwkOf(privateKey: KeyObject, kid: string, alg: SigningAlgorithm): PublicJwk {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  const members = jwk.kty === 'RSA' ? { n: jwk.n, e: jwk.e } : jwk.kty === 'EC' ? { crv: jwk.crv, x: jwk.x, y: jwk.y } : { crv: jwk.crv, x: jwk.x };
  return { kty: String(jwk.kty), ...members, kid, alg, use: 'sig' };
}

export function privateKeyFromPem(pem: string): KeyObject {
  return createPrivateKey(pem);
}
