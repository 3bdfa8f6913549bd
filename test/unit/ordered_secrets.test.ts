import { describe, expect, it } from 'vitest';
import { orderedSecret, orderedSecretDigest } from '../../src/crypto/ordered_secrets.js';
import { randomSecret, sha256 } from '../../src/crypto/secrets.js';

const prefix = 'lk_dc_';

describe('orderedSecret', () => {
  it('is the prefix, the milliseconds in 12 hex digits, then 32 random bytes', () => {
    const secret = orderedSecret(prefix, 1_795_000_000_123);
    expect(secret).toMatch(/^lk_dc_[0-9a-f]{12}[A-Za-z0-9_-]{43}$/);
    expect(parseInt(secret.slice(6, 18), 16)).toBe(1_795_000_000_123);
    expect(Buffer.from(secret.slice(18), 'base64url')).toHaveLength(32);
  });

  it('never repeats, even within one millisecond', () => {
    const made = new Set(Array.from({ length: 2000 }, () => orderedSecret(prefix, 1_795_000_000_000)));
    expect(made.size).toBe(2000);
  });
});

describe('orderedSecretDigest', () => {
  it('is the time digits then the SHA-256 of the whole secret', () => {
    const secret = orderedSecret(prefix, 1_795_000_000_123);
    expect(orderedSecretDigest(secret, prefix)).toBe(secret.slice(6, 18) + sha256(secret));
  });

  it('sorts in the order the secrets were made, whatever their random part', () => {
    const keys = [0, 1, 2, 999, 1000, 86_400_000].map((offset) => orderedSecretDigest(orderedSecret(prefix, 1_795_000_000_000 + offset), prefix));
    expect([...keys].sort()).toEqual(keys);
  });

  it('is the plain SHA-256 for a secret without the digits (made before them), a key of another length', () => {
    const earlier = randomSecret(prefix);
    expect(orderedSecretDigest(earlier, prefix)).toBe(sha256(earlier));
    expect(orderedSecretDigest(earlier, prefix)).toHaveLength(43);
    expect(orderedSecretDigest(orderedSecret(prefix), prefix)).toHaveLength(55);
  });

  it('anything not exactly of the form is hashed whole: wrong prefix, upper-case digits, a character too many or too few', () => {
    const secret = orderedSecret(prefix, 1_795_000_000_123);
    for (const other of [
      secret.replace('lk_dc_', 'lk_rt_'),
      secret.slice(0, 6) + secret.slice(6, 18).toUpperCase().replace(/[0-9]/g, 'A') + secret.slice(18),
      `${secret}x`,
      secret.slice(0, -1),
      `${secret.slice(0, 20)}+${secret.slice(21)}`,
      '',
    ]) {
      expect(orderedSecretDigest(other, prefix)).toBe(sha256(other));
    }
  });
});
