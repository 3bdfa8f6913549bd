/**
 * A signing key as the management API answers it (`/api/v1/keys`) and as `latchkey keys list
 * --json` prints it: one shape for both. Only what a relying party could see in the JWKS anyway
 * and the key's dates: the private key never leaves the store.
 */
import { z } from 'zod';
import type { SigningAlgorithm, SigningKeyRecord } from '../store/store.js';
import { isSealed } from '../crypto/secret_box.js';
import { isoSeconds } from './user_view.js';

export const keyViewSchema = z.object({
  kid: z.string(),
  alg: z.string(),
  /** active: signs; retired: published until `published_until` for the tokens it signed; expired: no longer published. */
  status: z.enum(['active', 'retired', 'expired']),
  created_at: z.string(),
  retired_at: z.string().nullable(),
  published_until: z.string().nullable(),
  /**
   * false: the private key is stored in the clear (written by an older build, or by hand):
   * `latchkey secret-key rotate` encrypts it; in a database whose other secrets are sealed the
   * server signs nothing with it until then.
   */
  sealed: z.boolean(),
});
export type KeyView = z.infer<typeof keyViewSchema>;

export const keyKidParamsSchema = z.strictObject({ kid: z.string().min(1).max(256) });

export const keyRotationSchema = z.object({
  /** The new active keys, the one access tokens are signed with first. */
  keys: z.array(keyViewSchema),
});

export function keyView(key: Omit<SigningKeyRecord, 'retiredAt'> & { retiredAt?: number | undefined }, retention: number, now: number): KeyView {
  const publishedUntil = key.retiredAt === undefined ? undefined : key.retiredAt + retention;
  return {
    kid: key.kid,
    alg: key.alg,
    status: publishedUntil === undefined ? 'active' : publishedUntil > now ? 'retired' : 'expired',
    created_at: isoSeconds(key.createdAt),
    retired_at: key.retiredAt === undefined ? null : isoSeconds(key.retiredAt),
    published_until: publishedUntil === undefined ? null : isoSeconds(publishedUntil),
    sealed: isSealed(key.privateKeyPem),
  };
}

/** Newest first, then by kid: the order of `keys list`, and a stable key for the API's pages. */
export function keyOrder(key: Pick<SigningKeyRecord, 'kid' | 'createdAt'>): string {
  return `${String(1e12 - key.createdAt).padStart(13, '0')}\u0000${key.kid}`;
}

export function keyViews(keys: readonly SigningKeyRecord[], retention: number, now: number): KeyView[] {
  return [...keys].sort((a, b) => (keyOrder(a) < keyOrder(b) ? -1 : 1)).map((k) => keyView(k, retention, now));
}

/**
 * The new keys of a rotation, the access-token key first: scripts that read one line get the key
 * new tokens are signed with. That is the server's non-RS256 key if it has one (RS256 then signs
 * only id_tokens), whatever LATCHKEY_SIGNING_ALG says.
 */
export function accessKeyFirst<T extends { alg: SigningAlgorithm }>(
  keys: readonly T[],
  previouslyActive: readonly SigningAlgorithm[],
  signingAlg: SigningAlgorithm,
): T[] {
  const accessAlg = previouslyActive.find((alg) => alg !== 'RS256') ?? signingAlg;
  return [...keys].sort((a, b) => Number(b.alg === accessAlg) - Number(a.alg === accessAlg));
}
