/**
 * Randomness, hashing and constant-time comparison for opaque secrets. Bearer secrets (device
 * codes, user codes, authorization codes, refresh tokens, client secrets, session ids) are stored
 * only as SHA-256 digests and looked up by digest, so a leaked database hands out nothing usable.
 */
import { createHash, createHmac, randomBytes, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';

/** Type prefixes let secret scanners recognise a leaked Latchkey secret. */
export const secretPrefix = {
  deviceCode: 'lk_dc_',
  authorizationCode: 'lk_ac_',
  refreshToken: 'lk_rt_',
  clientSecret: 'lk_cs_',
} as const;

/** 32 random bytes (256 bits), base64url, with an optional type prefix. */
export function randomSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function randomId(): string {
  return randomUUID();
}

/** Unbiased random string over `alphabet` (node:crypto randomInt rejects biased draws). */
export function randomString(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** A uniform random integer in [0, n), e.g. for retry jitter. */
export function randomBelow(n: number): number {
  return randomInt(n);
}

export function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/**
 * OIDC Core §3.1.3.6 at_hash / c_hash: base64url of the left half of the SHA-256 of the value
 * (for RS256/ES256/PS256, whose hash is SHA-256).
 */
export function leftHalfSha256(value: string): string {
  const digest = createHash('sha256').update(value, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

export function hmacSha256(key: string, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('base64url');
}

/** Constant-time string equality (lengths are compared on digests, so they leak nothing). */
export function constantTimeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}
