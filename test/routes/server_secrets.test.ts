/**
 * Server secrets encrypted at rest, as the server meets them: a database from
 * before encryption is sealed at start and keeps working with the same keys and secrets; the
 * database alone (without the key) gives nothing usable away.
 */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { manualClock } from '../../src/clock.js';
import { generateSigningKey } from '../../src/crypto/keys.js';
import { isSealed, SecretBox, SecretKeyError, secretKeyOf } from '../../src/crypto/secret_box.js';
import { readFileSync } from 'node:fs';
import { loadServerSecrets, resealAllSecrets, sealPlaintextSecrets } from '../../src/crypto/server_secrets.js';
import { createSigner } from '../../src/crypto/signer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { buildApp } from '../../src/app.js';
import { configFrom } from '../../src/config.js';

const t0 = 1_800_000_000;

/** A database file opened as the server opens it (store/open.ts: group commit, background checkpoints). */
function tempStore(): { store: SqliteStore; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-secrets-'));
  return { store: new SqliteStore({ path: join(dir, 'latchkey.db'), now: t0, groupCommit: true, backgroundCheckpoints: true }), dir };
}

describe('a database from before encryption', () => {
  it('is sealed at start, and the same signing key and secrets go on working; the plaintext bytes are gone from the files', async () => {
    const { store, dir } = tempStore();
    const path = join(dir, 'latchkey.db');
    try {
      // As an older version left it: the private key PEM and the HMAC keys in the clear.
      const legacy = generateSigningKey('RS256');
      await store.ensureSigningKey({ ...legacy, createdAt: t0 });
      await store.serverSecret('csrf', () => 'legacy-csrf-secret-0123456789abcdef');
      await store.serverSecret('user_code', () => 'legacy-user-code-key-0123456789abcd');

      store.db.pragma('wal_checkpoint(TRUNCATE)'); // as an old server left it: the plaintext in the database file
      const pem = legacy.privateKeyPem.split('\n')[1]!;
      expect(readFileSync(path).includes(Buffer.from(pem))).toBe(true);

      const box = new SecretBox([secretKeyOf(Buffer.alloc(32, 9))]);
      expect(await sealPlaintextSecrets(store, box)).toBe(3);
      const files = [path, `${path}-wal`].map((f) => {
        try {
          return readFileSync(f);
        } catch {
          return Buffer.alloc(0);
        }
      });
      for (const bytes of files) {
        expect(bytes.includes(Buffer.from(pem))).toBe(false);
        expect(bytes.includes(Buffer.from('legacy-csrf-secret'))).toBe(false);
      }
      const raw = store.db.prepare('SELECT private_key_pem FROM signing_keys UNION ALL SELECT value FROM server_secrets').all() as Array<
        Record<string, string>
      >;
      for (const row of raw) expect(isSealed(Object.values(row)[0]!)).toBe(true);
      expect(JSON.stringify(raw)).not.toContain('PRIVATE KEY');
      expect(JSON.stringify(raw)).not.toContain('legacy-csrf-secret');
      expect(await sealPlaintextSecrets(store, box)).toBe(0); // once is enough

      expect(await loadServerSecrets(store, box)).toMatchObject({
        csrfSecret: 'legacy-csrf-secret-0123456789abcdef',
        userCodeKey: 'legacy-user-code-key-0123456789abcd',
      });
      const clock = manualClock(t0);
      const signer = await createSigner(store, clock, { issuer: 'http://latchkey.test', retiredKeyRetention: 3600, secretBox: box });
      expect(await signer.activeKid()).toBe(legacy.kid);
      const token = await signer.signAccessToken({ iss: 'http://latchkey.test', sub: 'u', aud: 'a', client_id: 'c', iat: t0, exp: t0 + 60, jti: 'j' });
      await expect(jwtVerify(token, createLocalJWKSet({ keys: [legacy.publicJwk as never] }), { currentDate: new Date(t0 * 1000) })).resolves.toBeDefined();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the database without its key', () => {
  it('a server given another key refuses to start rather than make new secrets', async () => {
    const { store, dir } = tempStore();
    try {
      const config = configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' });
      const rightful = new SecretBox([secretKeyOf(Buffer.alloc(32, 1))]);
      const app = await buildApp({ config, store, logger: false, secretBox: rightful });
      await app.close();
      const thief = new SecretBox([secretKeyOf(Buffer.alloc(32, 2))]);
      await expect(buildApp({ config, store, logger: false, secretBox: thief })).rejects.toBeInstanceOf(SecretKeyError);
      await expect(resealAllSecrets(store, thief)).rejects.toThrow(/not among the configured keys/);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('new keys made by the server are stored sealed', async () => {
    const { store, dir } = tempStore();
    try {
      const box = new SecretBox([secretKeyOf(Buffer.alloc(32, 3))]);
      const app = await buildApp({ config: configFrom({ LATCHKEY_SIGNING_ALG: 'ES256' }), store, logger: false, secretBox: box });
      await app.close();
      const keys = await store.listSigningKeys();
      expect(keys.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
      for (const key of keys) expect(isSealed(key.privateKeyPem)).toBe(true);
      expect(box.open(`signing_key:${keys[0]!.kid}`, keys[0]!.privateKeyPem)).toContain('BEGIN PRIVATE KEY');
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what a secret key rotation and a tampered database do', () => {
  it('sealing at start leaves values under another configured key alone (instances restarted one by one keep agreeing)', async () => {
    const { store, dir } = tempStore();
    try {
      const oldKey = secretKeyOf(Buffer.alloc(32, 4));
      const newKey = secretKeyOf(Buffer.alloc(32, 5));
      await loadServerSecrets(store, new SecretBox([oldKey]));
      const before = store.db.prepare('SELECT value FROM server_secrets ORDER BY name').all();
      expect(await sealPlaintextSecrets(store, new SecretBox([newKey, oldKey]))).toBe(0);
      expect(store.db.prepare('SELECT value FROM server_secrets ORDER BY name').all()).toEqual(before);
      // The rotation command moves them.
      expect(await resealAllSecrets(store, new SecretBox([newKey, oldKey]))).toBeGreaterThan(0);
      expect(await loadServerSecrets(store, new SecretBox([newKey]))).toBeDefined();
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a plaintext value slipped into the database later (someone who can write to it) is refused, not used', async () => {
    const { store, dir } = tempStore();
    try {
      const box = new SecretBox([secretKeyOf(Buffer.alloc(32, 6))]);
      const app = await buildApp({ config: configFrom({}), store, logger: false, secretBox: box });
      await app.close();
      const attacker = generateSigningKey('RS256');
      store.db.prepare("UPDATE signing_keys SET private_key_pem = ? WHERE alg = 'RS256'").run(attacker.privateKeyPem);
      await expect(buildApp({ config: configFrom({}), store, logger: false, secretBox: box })).rejects.toThrow(/is not encrypted: refusing to use it/);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
