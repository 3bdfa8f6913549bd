/**
 * PKCE (RFC 7636) with S256 only: `plain` gives no protection against a stolen code and is
 * refused (RFC 9700 §2.1.1). A code_verifier is 43-128 characters of [A-Za-z0-9-._~] (§4.1);
 * it matches when base64url(SHA-256(verifier)) equals the stored challenge (§4.6).
 */
import { createHash } from 'node:crypto';
import { constantTimeEqual } from '../crypto/secrets.js';

const pkceValuePattern = /^[A-Za-z0-9\-._~]{43,128}$/;

export function isValidCodeChallenge(value: string): boolean {
  // An S256 challenge is a base64url SHA-256 digest: exactly 43 characters.
  return /^[A-Za-z0-9_-]{43}$/.test(value);
}

export function isValidCodeVerifier(value: string): boolean {
  return pkceValuePattern.test(value);
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function verifierMatches(verifier: string, challenge: string): boolean {
  return isValidCodeVerifier(verifier) && constantTimeEqual(s256(verifier), challenge);
}
