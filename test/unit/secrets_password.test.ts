import { describe, it, expect } from 'vitest';
import { createHash, createHmac } from 'node:crypto';
import { constantTimeEqual, hmacSha256, randomSecret, randomString, secretPrefix, sha256 } from '../../src/crypto/secrets.js';

describe('randomSecret', () => {
  it('is 32 random bytes in base64url (43 characters) without a prefix', () => {
    expect(randomSecret()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('starts with the given prefix', () => {
    const secret = randomSecret(secretPrefix.deviceCode);
    expect(secret.startsWith('lk_dc_')).toBe(true);
    expect(secret).toHaveLength('lk_dc_'.length + 43);
    expect(secret.slice(6)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('has the documented prefixes', () => {
    expect(secretPrefix).toEqual({
      deviceCode: 'lk_dc_',
      authorizationCode: 'lk_ac_',
      refreshToken: 'lk_rt_',
      clientSecret: 'lk_cs_',
      passwordResetLink: 'lk_pr_',
      emailVerificationLink: 'lk_ev_',
      registrationToken: 'lk_it_',
      registrationAccessToken: 'lk_ra_',
      factorEnrolmentLink: 'lk_fe_',
    });
  });

  it('never repeats', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => randomSecret('lk_rt_')));
    expect(secrets.size).toBe(1000);
  });
});

describe('sha256', () => {
  it('is the base64url SHA-256 digest (FIPS 180-2 test vectors)', () => {
    expect(sha256('abc')).toBe('ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0');
    expect(sha256('')).toBe('47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU');
  });

  it('is deterministic and distinguishes inputs', () => {
    expect(sha256('lk_dc_example')).toBe(sha256('lk_dc_example'));
    expect(sha256('lk_dc_example')).not.toBe(sha256('lk_dc_examplE'));
    expect(sha256('x')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('is what createHash gives, whichever way node:crypto computes it', () => {
    for (const value of ['', 'lk_rt_x', 'é\u0301', 'x'.repeat(10_000)])
      expect(sha256(value)).toBe(createHash('sha256').update(value, 'utf8').digest('base64url'));
  });

  it('hashes UTF-8', () => {
    expect(sha256('é')).toBe(sha256('\u00e9'));
    expect(sha256('é')).not.toBe(sha256('e\u0301'));
  });
});

describe('hmacSha256', () => {
  it('is HMAC-SHA-256 in base64url (RFC 4231 test case 2), under a key used once or many times', () => {
    const expected = Buffer.from('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843', 'hex').toString('base64url');
    expect(hmacSha256('Jefe', 'what do ya want for nothing?')).toBe(expected);
    expect(hmacSha256('Jefe', 'what do ya want for nothing?')).toBe(expected);
  });

  it('gives what createHmac gives with the string key (its UTF-8), for every key and value', () => {
    for (const [key, value] of [
      ['', 'x'],
      ['k', ''],
      ['clé', 'user_code:BCDFGHJK'],
      ['a'.repeat(100), 'é\u0301'],
    ]) {
      expect(hmacSha256(key!, value!)).toBe(createHmac('sha256', key!).update(value!, 'utf8').digest('base64url'));
    }
  });
});

describe('constantTimeEqual', () => {
  const rows: Array<[string, string, boolean]> = [
    ['abc', 'abc', true],
    ['', '', true],
    ['abc', 'abd', false],
    ['abc', 'ABC', false],
    ['abc', 'abcd', false],
    ['abcd', 'abc', false],
    ['', 'a', false],
    ['é', 'e\u0301', false],
  ];
  for (const [a, b, equal] of rows) {
    it(`${JSON.stringify(a)} vs ${JSON.stringify(b)} → ${equal}`, () => {
      expect(constantTimeEqual(a, b)).toBe(equal);
    });
  }
});

describe('randomString', () => {
  it('has the requested length and uses only the alphabet', () => {
    const value = randomString('BCD', 500);
    expect(value).toHaveLength(500);
    expect(value).toMatch(/^[BCD]{500}$/);
    expect(new Set(value).size).toBe(3);
  });

  it('with a one-letter alphabet repeats that letter', () => {
    expect(randomString('Q', 6)).toBe('QQQQQQ');
  });

  it('length 0 is empty', () => {
    expect(randomString('ABC', 0)).toBe('');
  });
});
