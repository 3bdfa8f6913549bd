/**
 * Password hashing: Argon2id with OWASP's parameters for new hashes, scrypt hashes of earlier
 * versions still verified, the rehash rule, the decoy for unknown usernames, and the work kept off
 * the event loop.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  decoyPasswordHash,
  hashPassword,
  isLocalPasswordHash,
  passwordHashNeedsRehash,
  passwordHashScheme,
  verifyPassword,
} from '../../src/crypto/password.js';
import { earlierScryptHash } from '../helpers/records.js';

const password = earlierScryptHash.password;
/** OWASP Password Storage Cheat Sheet: Argon2id, 19 MiB, 2 passes, 1 lane; PHC string, version 0x13, 16-byte salt, 32-byte hash. */
const currentArgon2id = /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/;
/**
 * Made by the reference implementation (phc-winner-argon2's `argon2` command, Debian's package):
 * `echo -n 'correct horse battery staple' | argon2 latchkey-kat-salt -id -k 19456 -t 2 -p 1 -l 32 -e`.
 */
const referenceArgon2id = '$argon2id$v=19$m=19456,t=2,p=1$bGF0Y2hrZXkta2F0LXNhbHQ$nkIsi7T6dyJufVGAQTyL2E5JmsODKBhzsp12Mo+9KYg';
const earlierScrypt = earlierScryptHash.hash;

describe('password hashing (Argon2id)', () => {
  let stored = '';
  beforeAll(async () => {
    stored = await hashPassword(password);
  });

  it('a new hash is Argon2id with m=19456 KiB, t=2, p=1, as a PHC string', () => {
    expect(stored).toMatch(currentArgon2id);
    expect(passwordHashScheme(stored)).toBe('argon2id');
    expect(passwordHashNeedsRehash(stored)).toBe(false);
  });

  it('verifies the right password and refuses wrong ones', async () => {
    expect(await verifyPassword(password, stored)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', stored)).toBe(false);
    expect(await verifyPassword('Correct horse battery staple', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('two hashes of the same password differ (random salt)', async () => {
    const again = await hashPassword(password);
    expect(again).not.toBe(stored);
    expect(again.split('$')[4]).not.toBe(stored.split('$')[4]);
    expect(await verifyPassword(password, again)).toBe(true);
  });

  it('verifies a hash made by the reference implementation, so the hashes do not depend on this library', async () => {
    expect(await verifyPassword(password, referenceArgon2id)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', referenceArgon2id)).toBe(false);
    expect(passwordHashNeedsRehash(referenceArgon2id)).toBe(false);
  });

  it('the same password composed another way (NFKC) matches', async () => {
    const composed = await hashPassword('caf\u00e9 au lait');
    expect(await verifyPassword('cafe\u0301 au lait', composed)).toBe(true);
  });

  it('a malformed stored hash is simply false, never an exception', async () => {
    const parts = stored.split('$');
    const malformed = [
      '',
      'upstream',
      'plain-text-password',
      password,
      stored.replace('$argon2id$', '$argon2x$'),
      parts.slice(0, 5).join('$'),
      '$argon2id$$$$',
      '$argon2id$v=19$m=19456,t=2,p=1$$',
      '$argon2id$v=19$m=0,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA',
      // Right shape but a truncated hash.
      `${parts.slice(0, 5).join('$')}$${(parts[5] ?? '').slice(0, 20)}`,
    ];
    for (const value of malformed) {
      await expect(verifyPassword(password, value), JSON.stringify(value)).resolves.toBe(false);
    }
  });

  it('many checks at once, damaged hashes among them, all finish with their own answers (hashes wait their turn for a core)', async () => {
    const checks = Array.from({ length: 9 }, (_, i) =>
      i % 3 === 0
        ? { typed: password, stored, right: true }
        : i % 3 === 1
          ? { typed: 'wrong password', stored, right: false }
          : { typed: password, stored: '$argon2id$damaged', right: false },
    );
    expect(await Promise.all(checks.map((c) => verifyPassword(c.typed, c.stored)))).toEqual(checks.map((c) => c.right));
    expect(await verifyPassword(password, stored)).toBe(true);
  });

  it('hashing and verifying run off the event loop (the library thread pool): the loop turns while they work', async () => {
    for (const work of [() => hashPassword(password), () => verifyPassword(password, stored), () => verifyPassword(password, earlierScrypt)]) {
      let turned = false;
      const pending = work();
      // A hash computed on the main thread would be done before this callback could run.
      setImmediate(() => (turned = true));
      await pending;
      expect(turned).toBe(true);
    }
  });
});

describe('password hashes of earlier versions (scrypt)', () => {
  it('an scrypt hash stored by an earlier version still verifies, and needs a rehash', async () => {
    expect(await verifyPassword(password, earlierScrypt)).toBe(true);
    expect(await verifyPassword('Correct horse battery staple', earlierScrypt)).toBe(false);
    expect(passwordHashScheme(earlierScrypt)).toBe('scrypt');
    expect(passwordHashNeedsRehash(earlierScrypt)).toBe(true);
  });

  it('a stored hash with unusable scrypt parameters is false, not an exception', async () => {
    const [, , , , salt, hash] = earlierScrypt.split('$');
    for (const params of ['abc$8$1', '3$8$1', '32768$x$1']) {
      const value = `scrypt$${params}$${salt}$${hash}`;
      await expect(verifyPassword(password, value), value).resolves.toBe(false);
    }
    for (const value of ['scrypt$$$$$', `scrypt$32768$8$1$${salt}$${(hash ?? '').slice(0, 20)}`]) {
      await expect(verifyPassword(password, value), value).resolves.toBe(false);
    }
  });
});

describe('the rehash rule', () => {
  it('anything but Argon2id with the current parameters needs a rehash', () => {
    const salt = 'bGF0Y2hrZXkta2F0LXNhbHQ';
    const tag = 'nkIsi7T6dyJufVGAQTyL2E5JmsODKBhzsp12Mo+9KYg';
    expect(passwordHashNeedsRehash(`$argon2id$v=19$m=19456,t=2,p=1$${salt}$${tag}`)).toBe(false);
    for (const older of [
      earlierScrypt,
      `$argon2id$v=19$m=65536,t=3,p=4$${salt}$${tag}`,
      `$argon2id$v=19$m=19456,t=1,p=1$${salt}$${tag}`,
      `$argon2id$v=19$m=19456,t=2,p=2$${salt}$${tag}`,
      `$argon2id$v=16$m=19456,t=2,p=1$${salt}$${tag}`,
      `$argon2id$v=19$m=19456,t=2,p=1$${salt}$${tag.slice(0, 22)}`,
      `$argon2i$v=19$m=19456,t=2,p=1$${salt}$${tag}`,
      '$argon2id$garbage',
    ]) {
      expect(passwordHashNeedsRehash(older), older).toBe(true);
    }
  });

  it('an account of a connector has no local password: nothing to verify, nothing to rehash', async () => {
    expect(isLocalPasswordHash('upstream')).toBe(false);
    expect(isLocalPasswordHash(earlierScrypt)).toBe(true);
    expect(isLocalPasswordHash(referenceArgon2id)).toBe(true);
    expect(await verifyPassword('upstream', 'upstream')).toBe(false);
  });
});

describe('the decoy for unknown usernames', () => {
  it('is an Argon2id hash with the current parameters, so an unknown name costs what a known one does', async () => {
    const decoy = await decoyPasswordHash();
    expect(decoy).toMatch(currentArgon2id);
    expect(passwordHashNeedsRehash(decoy)).toBe(false);
    // Made once per process, and of a password nobody knows.
    expect(await decoyPasswordHash()).toBe(decoy);
    expect(await verifyPassword('', decoy)).toBe(false);
  });
});
