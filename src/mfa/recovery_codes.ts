/**
 * Recovery codes: ten single-use codes for when the phone or the security key is gone. Each is 10
 * characters of an alphabet without look-alikes (50 bits), written `xxxxx-xxxxx`; they are shown
 * once and stored only as a keyed digest (HMAC with a server key of their own), so a copy of the
 * database gives no usable code and cannot even be guessed against offline.
 */
import { hmacSha256, randomString } from '../crypto/secrets.js';

export const recoveryCodeCount = 10;
const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
const length = 10;

export function newRecoveryCodes(): string[] {
  return Array.from({ length: recoveryCodeCount }, () => {
    const raw = randomString(alphabet, length);
    return `${raw.slice(0, 5)}-${raw.slice(5)}`;
  });
}

/** What a person typed, in the form the digest is of; undefined when it cannot be a recovery code. */
export function normalizeRecoveryCode(typed: string): string | undefined {
  const code = typed.toLowerCase().replace(/[\s-]/g, '');
  return code.length === length && Array.from(code).every((c) => alphabet.includes(c)) ? code : undefined;
}

export function recoveryCodeDigest(key: string, userId: string, normalized: string): string {
  // Bound to the user: one person's code digest says nothing about another's.
  return hmacSha256(key, `recovery:v1:${userId}:${normalized}`);
}
