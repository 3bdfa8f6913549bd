/**
 * The only importer of jose. Signs JWTs with the active key from the store, publishes the JWKS,
 * and verifies the access tokens this server issued.
 *
 * Key rotation (`latchkey keys rotate`) may happen in another process, so the signer compares a
 * cheap fingerprint of the key table at most once a second and reloads when it changed. A retired
 * key stays published (and accepted) until every token it signed has expired.
 */
import { createLocalJWKSet, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Store, SigningKeyRecord } from '../store/store.js';
import { generateSigningKey, privateKeyFromPem, type PublicJwk } from './keys.js';

export interface Signer {
  /** Signs `payload` with the active key; `typ` goes into the protected header. */
  sign(payload: JWTPayload, typ: string): Promise<string>;
  jwks(): Promise<{ keys: PublicJwk[] }>;
  activeKid(): Promise<string>;
  /**
   * The claims of a valid access token of ours (signature by a published key, `iss`, `typ`
   * at+jwt, not expired), or undefined.
   */
  verifyAccessToken(token: string): Promise<JWTPayload | undefined>;
  /** Reloads the keys from the store now. */
  refresh(): Promise<void>;
}

export interface SignerOptions {
  issuer: string;
  /** How long a retired key stays published: the longest lifetime of anything it signed. */
  retiredKeyRetention: number;
}

interface LoadedKeys {
  active: SigningKeyRecord;
  privateKey: KeyObject;
  published: PublicJwk[];
  verifyKeys: ReturnType<typeof createLocalJWKSet>;
  fingerprint: string;
  /** When the next retired key leaves the JWKS (Infinity when none is published). */
  nextRetirementEnd: number;
}

const recheckEverySeconds = 1;

/** Makes sure a signing key exists (first start), then returns a signer over the store's keys. */
export async function createSigner(store: Store, clock: Clock, options: SignerOptions): Promise<Signer> {
  let loaded: LoadedKeys;
  let checkedAt = 0;

  async function load(): Promise<void> {
    let keys = await store.listSigningKeys();
    if (!keys.some((k) => k.retiredAt === undefined)) {
      // Two processes may start at once on a fresh database; the store keeps only one first key.
      await store.ensureSigningKey({ ...generateSigningKey(), createdAt: Math.floor(clock()) });
      keys = await store.listSigningKeys();
    }
    const fingerprint = await store.signingKeysFingerprint();
    const active = keys.filter((k) => k.retiredAt === undefined).sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!active) throw new Error('no active signing key');
    const now = clock();

    // The active key first, then retired keys from the most recently retired.
    const publishedKeys = keys
      .filter((k) => k.retiredAt === undefined || k.retiredAt + options.retiredKeyRetention > now)
      .sort((a, b) => (a.kid === active.kid ? -1 : b.kid === active.kid ? 1 : (b.retiredAt ?? 0) - (a.retiredAt ?? 0)));
    const published = publishedKeys.map((k) => k.publicJwk);
    const retirementEnds = publishedKeys.flatMap((k) => (k.retiredAt === undefined ? [] : [k.retiredAt + options.retiredKeyRetention]));
    loaded = {
      active,
      privateKey: privateKeyFromPem(active.privateKeyPem),
      published,
      verifyKeys: createLocalJWKSet({ keys: published as unknown as import('jose').JWK[] }),
      fingerprint,
      nextRetirementEnd: Math.min(Infinity, ...retirementEnds),
    };
    checkedAt = now;
  }

  /** Notices a rotation done elsewhere, and retired keys whose retention has run out. */
  async function current(): Promise<LoadedKeys> {
    const now = clock();
    if (now - checkedAt >= recheckEverySeconds) {
      checkedAt = now;
      if (now >= loaded.nextRetirementEnd || (await store.signingKeysFingerprint()) !== loaded.fingerprint) await load();
    }
    return loaded;
  }

  await load();

  return {
    async sign(payload, typ) {
      const keys = await current();
      return new SignJWT(payload).setProtectedHeader({ alg: keys.active.alg, kid: keys.active.kid, typ }).sign(keys.privateKey);
    },
    async jwks() {
      return { keys: (await current()).published };
    },
    async activeKid() {
      return (await current()).active.kid;
    },
    async verifyAccessToken(token) {
      if (token.length > 8192 || token.split('.').length !== 3) return undefined;
      const keys = await current();
      try {
        const { payload } = await jwtVerify(token, keys.verifyKeys, {
          issuer: options.issuer,
          typ: 'at+jwt',
          algorithms: ['RS256'],
          currentDate: new Date(clock() * 1000),
          requiredClaims: ['sub', 'exp', 'iat', 'jti', 'client_id'],
        });
        return payload;
      } catch {
        return undefined;
      }
    },
    refresh: load,
  };
}
