/**
 * User codes (RFC 8628 §6.1): 8 characters from 20 consonants (no vowels, so no words; no
 * look-alike digits), about 34.5 bits, shown as XXXX-XXXX. Entry ignores case, dashes and spaces.
 */
import { hmacSha256, randomString } from '../crypto/secrets.js';

export const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';
const userCodeLength = 8;
const canonicalPattern = new RegExp(`^[${userCodeAlphabet}]{${userCodeLength}}$`);

/** A fresh user code in canonical form, e.g. `WDJBMJHT` (formatUserCode shows it). */
export function generateCanonicalUserCode(): string {
  return randomString(userCodeAlphabet, userCodeLength);
}

/** A fresh user code in display form, e.g. `WDJB-MJHT`. */
export function generateUserCode(): string {
  return formatUserCode(generateCanonicalUserCode());
}

/** The canonical 8-letter form of what a person typed, or undefined if it cannot be a user code. */
export function normalizeUserCode(input: string): string | undefined {
  if (input.length > 64) return undefined;
  const canonical = input.toUpperCase().replace(/[\s\-\u2010-\u2015]/g, '');
  return canonicalPattern.test(canonical) ? canonical : undefined;
}

export function formatUserCode(canonical: string): string {
  return `${canonical.slice(0, 4)}-${canonical.slice(4)}`;
}

/**
 * What the store keeps of a user code. With only ~2.6e10 possible codes a plain hash could be
 * reversed by trying them all, so it is an HMAC under a server secret that is never logged.
 */
export function userCodeDigest(key: string, canonical: string): string {
  return hmacSha256(key, `user_code:${canonical}`);
}
