/**
 * Server secrets encrypted at rest (issue 14 item 5), as the server meets them: a database from
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
import { loadServerSecrets, sealStoredSecrets } from '../../src/crypto/server_secrets.js';
import { createSigner } from '../../src/crypto/signer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { buildApp } from '../../src/app.js';
import { configFrom } from '../../src/config.js';

const t0 = 1_800_000_000;

function tempStore(): { store: SqliteStore; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-secrets-'));
  return { store: new SqliteStore({ path: join(dir, 'latchkey.db'), now: t0 }), dir };
}

describe('a database from before encryption', () => {
  it('is sealed at start, and the same signing key and secrets go on working', async () => {
    const { store, dir } = tempStore();
    try {
      // As an older version left it: the private key PEM and the HMAC keys in the clear.
      const legacy = generateSigningKey('RS256');
      await store.ensureSigningKey({ ...legacy, createdAt: t0 });
      await store.serverSecret('csrf', () => 'legacy-csrf-secret-0123456789abcdef');
      await store.serverSecret('user_code', () => 'legacy-user-code-key-0123456789abcd');

      const box = new SecretBox([secretKeyOf(Buffer.alloc(32, 9))]);
      expect(await sealStoredSecrets(store, box)).toBe(3);
      const raw = store.db.prepare('SELECT private_key_pem FROM signing_keys UNION ALL SELECT value FROM server_secrets').all() as Array<Record<string, string>>;
      for (const row of raw) expect(isSealed(Object.values(row)[0]!)).toBe(true);
      expect(JSON.stringify(raw)).not.toContain('PRIVATE KEY');
      expect(JSON.stringify(raw)).not.toContain('legacy-csrf-secret');
      expect(await sealStoredSecrets(store, box)).toBe(0); // once is enough

      expect(await loadServerSecrets(store, box)).toEqual({ csrfSecret: 'legacy-csrf-secret-0123456789abcdef', userCodeKey: 'legacy-user-code-key-0123456789abcd' });
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
      await expect(sealStoredSecrets(store, thief)).rejects.toThrow(/not among the configured keys/);
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
