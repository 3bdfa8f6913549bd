/**
 * Bearer secrets whose stored digests come in time order. A secret is looked up by the SHA-256 of
 * it, and a digest lands on a random page of its unique index: every secret written dirtied a page
 * of its own, and each dirty page is a 4 KiB frame appended to SQLite's WAL at the commit (a
 * quarter of a device authorization's commit; PostgreSQL writes a full-page image the same way
 * after each checkpoint).
 *
 * So such a secret starts, after its type prefix, with 12 hex digits of the milliseconds when it
 * was made, then 32 random bytes (the 256 bits of a plain secret, unchanged), and its lookup key
 * is those 12 digits followed by the SHA-256 of the whole secret. Keys made together sort
 * together, and the secrets of one commit share the index's last page.
 *
 * The digits say when the secret was made, to whoever already holds it; the database keeps that
 * time beside it anyway. The key cannot be forged: the hash covers the digits, so another secret
 * with the same key is a SHA-256 preimage. A secret without the digits (made before they were
 * added, or any other string) is looked up by its plain SHA-256, a key 12 characters shorter, so
 * the two kinds never meet.
 */
import { randomSecret, sha256 } from './secrets.js';

/** 48 bits of milliseconds: enough until the year 10889. */
const timeDigits = 12;
/** 32 bytes in base64url without padding. */
const randomChars = 43;
const orderedTail = new RegExp(`^[0-9a-f]{${timeDigits}}[A-Za-z0-9_-]{${randomChars}}$`);

/** A new secret: `prefix`, the time in 12 hex digits, then 32 random bytes (base64url). */
export function orderedSecret(prefix: string, nowMs = Date.now()): string {
  return prefix + Math.floor(nowMs).toString(16).padStart(timeDigits, '0').slice(-timeDigits) + randomSecret();
}

/** The key a secret is stored and looked up by (see the module comment). */
export function orderedSecretDigest(secret: string, prefix: string): string {
  const tail = secret.startsWith(prefix) ? secret.slice(prefix.length) : '';
  if (tail.length !== timeDigits + randomChars || !orderedTail.test(tail)) return sha256(secret);
  return tail.slice(0, timeDigits) + sha256(secret);
}
