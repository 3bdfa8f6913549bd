/**
 * The proof-of-possession key of `latchkey login --dpop` (RFC 9449): an ES256 key pair made on
 * this machine, whose private half is kept in the credentials file (mode 0600) and never sent
 * anywhere. Tokens issued to it are bound to it, so a copied access or refresh token alone is
 * useless. openid-client signs the proofs of its own requests; `latchkey token --dpop-proof`
 * makes one for a request of the person's choosing.
 */
import { createHash, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import { oidc } from './oidc.js';

const algorithm = 'ES256';

export async function newDpopKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(algorithm, { extractable: true });
  return { ...(await exportJWK(privateKey)), alg: algorithm };
}

/** The public half, as a proof's `jwk` header carries it. */
function publicJwk(jwk: JWK): JWK {
  const { kty, crv, x, y } = jwk;
  return { kty, crv, x, y };
}

async function keyPair(jwk: JWK): Promise<oidc.CryptoKeyPair> {
  const privateKey = (await importJWK(jwk, algorithm)) as CryptoKey;
  const publicKey = (await importJWK(publicJwk(jwk), algorithm, { extractable: true })) as CryptoKey;
  return { privateKey, publicKey };
}

/** openid-client's DPoP handle for this key (it adds proofs and retries on the server's nonce). */
export async function dpopHandle(config: oidc.Configuration, jwk: JWK): Promise<oidc.DPoPHandle> {
  return oidc.getDPoPHandle(config, await keyPair(jwk));
}

export interface ProofFor {
  method: string;
  url: string;
  /** The access token the request carries (`ath`). */
  accessToken?: string;
  nonce?: string;
}

/** One DPoP proof (RFC 9449 §4.2) for one request. */
export async function dpopProof(jwk: JWK, request: ProofFor): Promise<string> {
  const url = new URL(request.url);
  const htu = `${url.protocol}//${url.host}${url.pathname}`;
  return new SignJWT({
    htm: request.method.toUpperCase(),
    htu,
    jti: randomUUID(),
    iat: Math.floor(Date.now() / 1000),
    ...(request.accessToken === undefined ? {} : { ath: createHash('sha256').update(request.accessToken).digest('base64url') }),
    ...(request.nonce === undefined ? {} : { nonce: request.nonce }),
  })
    .setProtectedHeader({ alg: algorithm, typ: 'dpop+jwt', jwk: publicJwk(jwk) })
    .sign((await keyPair(jwk)).privateKey);
}
