/**
 * Server secrets at rest: AES-256-GCM under a key kept outside the database,
 * bound to where the value lives, with key ids so keys can be rotated.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateSecretKeyText,
  isSealed,
  parseSecretKey,
  parseSecretKeys,
  SecretBox,
  SecretKeyError,
  sealedKeyId,
  secretKeyOf,
} from '../../src/crypto/secret_box.js';
import { openSecretBox, readKeyFile } from '../../src/crypto/secret_key_file.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { signingKey } from '../helpers/records.js';

const keyA = secretKeyOf(Buffer.alloc(32, 1));
const keyB = secretKeyOf(Buffer.alloc(32, 2));

describe('SecretBox', () => {
  it('seals with the current key and opens again; every seal differs (fresh nonce)', () => {
    const box = new SecretBox([keyA]);
    const one = box.seal('server_secret:csrf', 'the secret');
    const two = box.seal('server_secret:csrf', 'the secret');
    expect(one).not.toBe(two);
    expect(one).toMatch(/^lk1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(one).not.toContain('the secret');
    expect(sealedKeyId(one)).toBe(keyA.id);
    expect(box.open('server_secret:csrf', one)).toBe('the secret');
  });

  it('a value moved to another place (context) does not open', () => {
    const box = new SecretBox([keyA]);
    const sealed = box.seal('signing_key:k1', '-----BEGIN PRIVATE KEY-----');
    expect(() => box.open('signing_key:k2', sealed)).toThrow(SecretKeyError);
  });

  it('an altered value does not open', () => {
    const box = new SecretBox([keyA]);
    const sealed = box.seal('server_secret:csrf', 'value');
    const last = sealed.at(-1) === 'A' ? 'B' : 'A';
    expect(() => box.open('server_secret:csrf', sealed.slice(0, -1) + last)).toThrow(SecretKeyError);
    expect(() => box.open('server_secret:csrf', 'lk1.x.y.z')).toThrow(SecretKeyError);
  });

  it('a value sealed under a key it does not hold names that key', () => {
    const sealed = new SecretBox([keyB]).seal('server_secret:csrf', 'v');
    expect(() => new SecretBox([keyA]).open('server_secret:csrf', sealed)).toThrow(new RegExp(`secret key ${keyB.id}`));
  });

  it('opens under any of its keys, seals under the first; reseal moves a value to the first key', () => {
    const old = new SecretBox([keyA]).seal('c', 'v');
    const both = new SecretBox([keyB, keyA]);
    expect(both.open('c', old)).toBe('v');
    const moved = both.reseal('c', old);
    expect(sealedKeyId(moved)).toBe(keyB.id);
    expect(both.reseal('c', moved)).toBe(moved); // already under the current key: unchanged
    expect(new SecretBox([keyB]).open('c', moved)).toBe('v');
  });

  it('a value stored in the clear is never used as it is (someone wrote it there), but reseal seals one an older version left', () => {
    const box = new SecretBox([keyA]);
    expect(isSealed('-----BEGIN PRIVATE KEY-----')).toBe(false);
    expect(() => box.open('c', 'plain')).toThrow(/is not encrypted: refusing to use it/);
    const sealed = box.reseal('c', 'plain');
    expect(isSealed(sealed)).toBe(true);
    expect(box.open('c', sealed)).toBe('plain');
  });

  it('asks for its keys again when a value names one it does not hold (a key file rotated meanwhile)', () => {
    let reloads = 0;
    const box = new SecretBox([keyA], () => (reloads++, [keyB, keyA]));
    const sealed = new SecretBox([keyB]).seal('c', 'v');
    expect(box.open('c', sealed)).toBe('v');
    expect(reloads).toBe(1);
    expect(box.currentKeyId).toBe(keyB.id);
  });
});

describe('key text', () => {
  it('accepts 43 base64url characters, 44 base64 characters, or 64 hex digits', () => {
    const raw = Buffer.alloc(32, 7);
    expect(parseSecretKey(raw.toString('base64url'))).toEqual(raw);
    expect(parseSecretKey(raw.toString('base64'))).toEqual(raw);
    expect(parseSecretKey(raw.toString('hex'))).toEqual(raw);
    expect(parseSecretKey('short')).toBeUndefined();
    expect(parseSecretKey(Buffer.alloc(16).toString('hex'))).toBeUndefined();
  });

  it('several keys, comma- or line-separated, comments ignored; one bad key spoils the list', () => {
    const a = generateSecretKeyText();
    const b = generateSecretKeyText();
    expect(parseSecretKeys(`${a},${b}`)?.map((k) => k.id)).toEqual([a, b].map((k) => secretKeyOf(parseSecretKey(k)!).id));
    expect(parseSecretKeys(`# current\n${a}\n${b}\n`)).toHaveLength(2);
    expect(parseSecretKeys(`${a},nope`)).toBeUndefined();
    expect(parseSecretKeys('')).toBeUndefined();
  });
});

describe('the key file', () => {
  it('is not made anew for a database whose secrets are already encrypted (a backup without its key file)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-key-'));
    try {
      const path = join(dir, 'latchkey.db');
      const store = new SqliteStore({ path, now: 1_800_000_000 });
      const box = await openSecretBox({ secretKeys: undefined, secretKeyFile: `${path}.key` }, store);
      await store.ensureSigningKey({ ...signingKey('k1'), privateKeyPem: box.seal('signing_key:k1', 'pem') });
      rmSync(`${path}.key`);
      await expect(openSecretBox({ secretKeys: undefined, secretKeyFile: `${path}.key` }, store)).rejects.toThrow(
        /is missing, but the database's secrets are encrypted \(with key /,
      );
      expect(existsSync(`${path}.key`)).toBe(false);
      await store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is created 0600 on first use with one fresh key, and read back the same afterwards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-key-'));
    try {
      const path = join(dir, 'sub', 'latchkey.db.key');
      const first = await openSecretBox({ secretKeys: undefined, secretKeyFile: path });
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(readFileSync(path, 'utf8')).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
      const again = await openSecretBox({ secretKeys: undefined, secretKeyFile: path });
      expect(again.currentKeyId).toBe(first.currentKeyId);
      expect(again.open('c', first.seal('c', 'v'))).toBe('v');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a damaged key file is an error naming it, never silently replaced', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-key-'));
    try {
      const path = join(dir, 'latchkey.db.key');
      writeFileSync(path, 'not a key\n', { mode: 0o600 });
      await expect(openSecretBox({ secretKeys: undefined, secretKeyFile: path })).rejects.toThrow(new RegExp(path));
      expect(() => readKeyFile(path)).toThrow(SecretKeyError);
      expect(readFileSync(path, 'utf8')).toBe('not a key\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('LATCHKEY_SECRET_KEY wins over any file, and an in-memory database gets a key of its own', async () => {
    expect((await openSecretBox({ secretKeys: [keyA], secretKeyFile: undefined })).currentKeyId).toBe(keyA.id);
    const ephemeral = await openSecretBox({ secretKeys: undefined, secretKeyFile: undefined });
    expect(ephemeral.open('c', ephemeral.seal('c', 'v'))).toBe('v');
  });
});

describe('a box on a key file that is replaced while it is in use', () => {
  it('seals with the key the file holds now, never one it no longer holds (secret-key rotate in another process)', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    // eslint-disable-next-line @typescript-eslint/unbound-method -- node:path's functions use no `this`
    const { join } = await import('node:path');
    const { openSecretBox, writeKeyFile } = await import('../../src/crypto/secret_key_file.js');
    const { generateSecretKeyText, sealedKeyId, secretKeyOf } = await import('../../src/crypto/secret_box.js');
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-box-'));
    try {
      const path = join(dir, 'db.key');
      const first = generateSecretKeyText();
      writeKeyFile(path, [first]);
      const box = await openSecretBox({ secretKeys: undefined, secretKeyFile: path });
      expect(sealedKeyId(box.seal('c', 'v'))).toBe(secretKeyOf(Buffer.from(first, 'base64url')).id);
      const second = generateSecretKeyText();
      writeKeyFile(path, [second]);
      const sealed = box.seal('c', 'v');
      expect(sealedKeyId(sealed)).toBe(secretKeyOf(Buffer.from(second, 'base64url')).id);
      expect(box.open('c', sealed)).toBe('v');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
