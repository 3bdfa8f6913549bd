import { describe, it, expect } from 'vitest';
import { isValidCodeChallenge, isValidCodeVerifier, s256, verifierMatches } from '../../src/oauth/pkce.js';

// RFC 7636 Appendix B.
const rfcVerifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const rfcChallenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

describe('s256', () => {
  it('matches the RFC 7636 Appendix B vector', () => {
    expect(s256(rfcVerifier)).toBe(rfcChallenge);
  });
});

describe('isValidCodeChallenge', () => {
  it.each([
    ['the RFC 7636 Appendix B challenge', rfcChallenge, true],
    ['43 base64url characters with - and _', `${'A'.repeat(41)}-_`, true],
    ['42 characters', 'A'.repeat(42), false],
    ['44 characters', 'A'.repeat(44), false],
    ['base64 padding', `${'A'.repeat(42)}=`, false],
    ['base64 (not url) +', `${'A'.repeat(42)}+`, false],
    ['base64 (not url) /', `${'A'.repeat(42)}/`, false],
    ['a dot, which a verifier may hold but a digest never does', `${'A'.repeat(42)}.`, false],
    ['a tilde', `${'A'.repeat(42)}~`, false],
    ['a space', `${'A'.repeat(42)} `, false],
    ['a trailing newline', `${rfcChallenge}\n`, false],
    ['the empty string', '', false],
  ])('%s → %s', (_name, value, expected) => {
    expect(isValidCodeChallenge(value)).toBe(expected);
  });
});

describe('isValidCodeVerifier', () => {
  it.each([
    ['the RFC 7636 Appendix B verifier', rfcVerifier, true],
    ['43 characters (minimum)', 'a'.repeat(43), true],
    ['128 characters (maximum)', 'a'.repeat(128), true],
    ['every unreserved character', `${'Az09'.repeat(10)}-._~`, true],
    ['42 characters', 'a'.repeat(42), false],
    ['129 characters', 'a'.repeat(129), false],
    ['a space', `${'a'.repeat(42)} `, false],
    ['a plus', `${'a'.repeat(42)}+`, false],
    ['a slash', `${'a'.repeat(42)}/`, false],
    ['an equals sign', `${'a'.repeat(42)}=`, false],
    ['a non-ASCII letter', `${'a'.repeat(42)}é`, false],
    ['a trailing newline', `${rfcVerifier}\n`, false],
    ['the empty string', '', false],
  ])('%s → %s', (_name, value, expected) => {
    expect(isValidCodeVerifier(value)).toBe(expected);
  });
});

describe('verifierMatches', () => {
  it('true for the RFC 7636 Appendix B pair', () => {
    expect(verifierMatches(rfcVerifier, rfcChallenge)).toBe(true);
  });

  it('false for another valid verifier', () => {
    expect(verifierMatches(`${rfcVerifier.slice(0, -1)}Y`, rfcChallenge)).toBe(false);
  });

  it('false against another challenge, and against a prefix of the right one', () => {
    expect(verifierMatches(rfcVerifier, s256('a'.repeat(43)))).toBe(false);
    expect(verifierMatches(rfcVerifier, rfcChallenge.slice(0, 42))).toBe(false);
    expect(verifierMatches(rfcVerifier, '')).toBe(false);
  });

  it('false when the verifier is sent in place of the challenge (plain)', () => {
    expect(verifierMatches(rfcVerifier, rfcVerifier)).toBe(false);
  });

  it.each([
    ['42 characters', 'b'.repeat(42)],
    ['129 characters', 'b'.repeat(129)],
    ['a space', `${'b'.repeat(42)} `],
    ['a plus', `${'b'.repeat(42)}+`],
  ])('false for a malformed verifier (%s) even though its S256 hash is the stored challenge', (_name, verifier) => {
    const challenge = s256(verifier);
    expect(isValidCodeChallenge(challenge)).toBe(true);
    expect(verifierMatches(verifier, challenge)).toBe(false);
  });
});
