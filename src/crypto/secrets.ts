/**
 * Randomness, hashing and constant-time comparison for opaque secrets. Bearer secrets (device
 * codes, user codes, authorization codes, refresh tokens, client secrets, session ids) are stored
 * only as SHA-256 digests and looked up by digest, so a leaked database hands out nothing usable.
 */
import * as nodeCrypto from 'node:crypto';
import { createHash, createHmac, createSecretKey, randomFillSync, randomInt, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * node:crypto's one-shot digest (Node 20.12 and later): less than half the cost of a Hash object
 * for the short values hashed on every request. createHash gives the same digest on older Node.
 */
const digestOnce: (algorithm: string, data: string, encoding: 'base64url') => string =
  typeof nodeCrypto.hash === 'function' ? nodeCrypto.hash : (algorithm, data, encoding) => createHash(algorithm).update(data, 'utf8').digest(encoding);
const digestOnceBuffer: (algorithm: string, data: string) => Buffer =
  typeof nodeCrypto.hash === 'function'
    ? (algorithm, data) => nodeCrypto.hash(algorithm, data, 'buffer')
    : (algorithm, data) => createHash(algorithm).update(data, 'utf8').digest();

/** Type prefixes let secret scanners recognise a leaked Latchkey secret. */
export const secretPrefix = {
  deviceCode: 'lk_dc_',
  authorizationCode: 'lk_ac_',
  refreshToken: 'lk_rt_',
  clientSecret: 'lk_cs_',
  passwordResetLink: 'lk_pr_',
  emailVerificationLink: 'lk_ev_',
  factorEnrolmentLink: 'lk_fe_',
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
  for (let i = 0; i < length; i++) out += alphabet.charAt(randomInt(alphabet.length));
  return out;
}

/** A uniform random integer in [0, n), e.g. for retry jitter. */
export function randomBelow(n: number): number {
  return randomInt(n);
}

export function sha256(value: string): string {
  return digestOnce('sha256', value, 'base64url');
}

/**
 * OIDC Core §3.1.3.6 at_hash / c_hash: base64url of the left half of the SHA-256 of the value
 * (for RS256/ES256/PS256, whose hash is SHA-256).
 */
export function leftHalfSha256(value: string): string {
  const digest = createHash('sha256').update(value, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/**
 * The server's HMAC keys as KeyObjects, made once: a string key is turned into one on every
 * createHmac. The same bytes (the key's UTF-8), so the same MACs. Only the server's few keys come
 * here; the bound is a safety net.
 */
const hmacKeys = new Map<string, KeyObject>();

function hmacKey(key: string): KeyObject {
  let keyObject = hmacKeys.get(key);
  if (keyObject === undefined) {
    if (hmacKeys.size >= 64) hmacKeys.clear();
    keyObject = createSecretKey(Buffer.from(key, 'utf8'));
    hmacKeys.set(key, keyObject);
  }
  return keyObject;
}

export function hmacSha256(key: string, value: string): string {
  return createHmac('sha256', hmacKey(key)).update(value, 'utf8').digest('base64url');
}

/** Constant-time string equality (lengths are compared on digests, so they leak nothing). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digestOnceBuffer('sha256', a), digestOnceBuffer('sha256', b)) && a.length === b.length;
}
