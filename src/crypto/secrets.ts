/**
 * Randomness, hashing and constant-time comparison for opaque secrets. Bearer secrets (device
 * codes, user codes, authorization codes, refresh tokens, client secrets, session ids) are stored
 * only as SHA-256 digests and looked up by digest, so a leaked database hands out nothing usable.
 */
import { createHash, createHmac, randomFillSync, randomInt, randomUUID, timingSafeEqual } from 'node:crypto';

/** Type prefixes let secret scanners recognise a leaked Latchkey secret. */
export const secretPrefix = {
  deviceCode: 'lk_dc_',
  authorizationCode: 'lk_ac_',
  refreshToken: 'lk_rt_',
  clientSecret: 'lk_cs_',
  passwordResetLink: 'lk_pr_',
  emailVerificationLink: 'lk_ev_',
  registrationToken: 'lk_it_',
  registrationAccessToken: 'lk_ra_',
} as const;

/**
 * CSPRNG output drawn 8 KiB at a time: one call into OpenSSL per ~250 secrets instead of one each
 * (node:crypto's randomUUID caches the same way). Every byte is handed out once.
 */
const pool = Buffer.alloc(8192);
let poolOffset = pool.length;

function randomView(size: number): Buffer {
  if (poolOffset + size > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const view = pool.subarray(poolOffset, poolOffset + size);
  poolOffset += size;
  return view;
}

/** 32 random bytes (256 bits), base64url, with an optional type prefix. */
export function randomSecret(prefix = ''): string {
  return prefix + randomView(32).toString('base64url');
}

/** A random UUIDv4 for ids that others see and that must say nothing, such as a user's `sub`. */
export function randomUuid(): string {
  return randomUUID();
}

/**
 * A UUIDv7 (RFC 9562 §5.7): 48 bits of milliseconds, then 74 random bits. Ids that grow with time
 * are appended to the end of their index instead of landing on a random page, so the rows written
 * together share pages and a commit writes fewer of them. For rows written at request rate (grants,
 * refresh tokens, families, jti); never for secrets, nor for user ids (a `sub` must not tell when
 * the account was made).
 */
export function randomId(): string {
  const bytes = Buffer.from(randomView(16));
  bytes.writeUIntBE(Date.now(), 0, 6);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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
