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

/** Why what a person typed cannot be a user code, so the page can say what is wrong with it. */
export type UserCodeProblem = 'empty' | 'not_letters' | 'letters_never_used' | 'too_short' | 'too_long';

/** The letters of A–Z that no code contains, AEIOUY: the vowels and Y (so no words can form). */
export const lettersNeverUsed = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.replace(new RegExp(`[${userCodeAlphabet}]`, 'g'), '');
const neverUsedPattern = new RegExp(`[${lettersNeverUsed}]`);

/** What is wrong with a typed code, read as normalizeUserCode reads it; undefined when it has the form of one. */
export function userCodeProblem(input: string): UserCodeProblem | undefined {
  if (input.length > 64) return 'too_long';
  const canonical = input.toUpperCase().replace(/[\s\-\u2010-\u2015]/g, '');
  if (canonical === '') return 'empty';
  if (!/^[A-Z]+$/.test(canonical)) return 'not_letters';
  if (neverUsedPattern.test(canonical)) return 'letters_never_used';
  if (canonical.length < userCodeLength) return 'too_short';
  if (canonical.length > userCodeLength) return 'too_long';
  return undefined;
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
