/**
 * Signing keys: generation and the public JWK of each. Private keys are kept as PKCS#8 PEM in the
 * store (they must be usable to sign); only public JWKs leave the server.
 */
import { generateKeyPairSync, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { randomBytes } from 'node:crypto';

export type SigningAlgorithm = 'RS256';

export interface GeneratedKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKeyPem: string;
  publicJwk: PublicJwk;
}

export interface PublicJwk {
  kty: string;
  kid: string;
  alg: string;
  use: 'sig';
  n?: string;
  e?: string;
  crv?: string;
  x?: string;
  y?: string;
}

export function generateSigningKey(alg: SigningAlgorithm = 'RS256'): GeneratedKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(12).toString('base64url');
  return {
    kid,
    alg,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicJwk: publicJwkOf(privateKey, kid, alg),
  };
}

export function publicJwkOf(privateKey: KeyObject, kid: string, alg: SigningAlgorithm): PublicJwk {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return { kty: String(jwk.kty), n: jwk.n, e: jwk.e, kid, alg, use: 'sig' };
}

export function privateKeyFromPem(pem: string): KeyObject {
  return createPrivateKey(pem);
}
