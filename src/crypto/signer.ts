/**
 * The only importer of jose. Signs JWTs with the active key from the store and publishes the JWKS.
 * The active key is looked up once and cached; `refresh()` re-reads the store (after a rotation).
 */
import { SignJWT, type JWTPayload } from 'jose';
import type { KeyObject } from 'node:crypto';
import type { Store, SigningKeyRecord } from '../store/store.js';
import { generateSigningKey, privateKeyFromPem, type PublicJwk } from './keys.js';

export interface Signer {
  /** Signs `payload` with the active key; `typ` goes into the protected header. */
  sign(payload: JWTPayload, typ: string): Promise<string>;
  jwks(): { keys: PublicJwk[] };
  activeKid(): string;
  refresh(): Promise<void>;
}

interface LoadedKey {
  record: SigningKeyRecord;
  privateKey: KeyObject;
}

/** Makes sure a signing key exists (first start), then returns a signer over the store's keys. */
export async function createSigner(store: Store, now: () => number): Promise<Signer> {
  let active: LoadedKey;
  let published: PublicJwk[] = [];

  async function load(): Promise<void> {
    let keys = await store.listSigningKeys();
    if (!keys.some((k) => k.retiredAt === undefined)) {
      const generated = generateSigningKey();
      // Two processes may start at once on a fresh database; the store keeps only one first key.
      await store.ensureSigningKey({ ...generated, createdAt: Math.floor(now()) });
      keys = await store.listSigningKeys();
    }
    const newest = keys.filter((k) => k.retiredAt === undefined).sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!newest) throw new Error('no active signing key');
    active = { record: newest, privateKey: privateKeyFromPem(newest.privateKeyPem) };
    published = keys.map((k) => k.publicJwk);
  }

  await load();

  return {
    async sign(payload, typ) {
      return new SignJWT(payload)
        .setProtectedHeader({ alg: active.record.alg, kid: active.record.kid, typ })
        .sign(active.privateKey);
    },
    jwks: () => ({ keys: published }),
    activeKid: () => active.record.kid,
    refresh: load,
  };
}
