/**
 * The first user's generated password: kept sealed with the secret key (never in the clear),
 * offered again at every start until its user signs in or the password changes, and the same
 * password for two starts racing on one empty database.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bootstrap, pendingPasswordSecret } from '../../src/bootstrap.js';
import { manualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { SecretBox, parseSecretKeys } from '../../src/crypto/secret_box.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { auditRecord } from '../../src/audit/audit_trail.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { testPasswordHash } from '../helpers/app.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

const key = 'K'.repeat(43);
const config = configFrom({ LATCHKEY_SECRET_KEY: key, LATCHKEY_DB: ':memory:' });
const box = new SecretBox(parseSecretKeys(key)!);
const clock = manualClock();
let store: SqliteStore;

const start = () => bootstrap(store, config, clock, testPasswordHash, box);

describe('the generated first password', () => {
  afterEach(async () => store.close());

  it('is stored sealed, not in the clear, and shown again at the next start while nobody used it', async () => {
    store = new SqliteStore({ path: ':memory:' });
    const first = await start();
    expect(first.createdUser).toBe('admin');
    const password = first.pendingPassword!.password;
    expect(password).toMatch(/^[A-Za-z0-9]{20}$/);
    const stored = (await store.findServerSecret(pendingPasswordSecret))!;
    expect(stored.startsWith('lk1.')).toBe(true);
    expect(stored).not.toContain(password);
    // A start that failed to listen, or died before it printed: the next start shows the same one.
    expect(await start()).toEqual({ createdUser: undefined, pendingPassword: { username: 'admin', password } });
  });

  it('is no longer shown, and no longer kept, once the user signed in', async () => {
    store = new SqliteStore({ path: ':memory:' });
    await start();
    const admin = (await store.findUserByUsername('admin'))!;
    await store.appendAuditEvents([auditRecord(Date.now(), 'signin.first_step', '127.0.0.1', { userId: admin.id })]);
    expect((await start()).pendingPassword).toBeUndefined();
    expect(await store.findServerSecret(pendingPasswordSecret)).toBeUndefined();
  });

  it('is no longer shown, and no longer kept, once the password changed', async () => {
    store = new SqliteStore({ path: ':memory:' });
    await start();
    const admin = (await store.findUserByUsername('admin'))!;
    await store.setUserPassword(admin.username, await testPasswordHash('a password of their own'), Math.floor(clock()));
    expect((await start()).pendingPassword).toBeUndefined();
    expect(await store.findServerSecret(pendingPasswordSecret)).toBeUndefined();
  });

  it('two starts racing on one empty database: one makes the user, both show the one password it has', async () => {
    store = new SqliteStore({ path: ':memory:' });
    const [a, b] = await Promise.all([start(), start()]);
    expect([a.createdUser, b.createdUser].filter(Boolean)).toEqual(['admin']);
    expect(a.pendingPassword).toBeDefined();
    expect(b.pendingPassword).toEqual(a.pendingPassword);
    expect(await store.countUsers()).toBe(1);
  });

  it('an operator-chosen LATCHKEY_BOOTSTRAP_PASSWORD is not kept', async () => {
    store = new SqliteStore({ path: ':memory:' });
    const chosen = configFrom({ LATCHKEY_SECRET_KEY: key, LATCHKEY_DB: ':memory:', LATCHKEY_BOOTSTRAP_PASSWORD: 'the operator chose this' });
    expect(await bootstrap(store, chosen, clock, testPasswordHash, box)).toEqual({ createdUser: 'admin', pendingPassword: undefined });
    expect(await store.findServerSecret(pendingPasswordSecret)).toBeUndefined();
  });
});

describeWithPostgres('the generated first password on PostgreSQL', () => {
  it('two instances starting at once on one empty database: one makes the user, both show the one password it has', async () => {
    const schema = freshSchema();
    const open = () => PostgresStore.open({ url: pgTestUrl!, schema, directoryCache: true, transactionDeadline: true });
    const [a, b] = [await open(), await open()];
    try {
      const [first, second] = await Promise.all([bootstrap(a, config, clock, testPasswordHash, box), bootstrap(b, config, clock, testPasswordHash, box)]);
      expect([first.createdUser, second.createdUser].filter(Boolean)).toEqual(['admin']);
      expect(first.pendingPassword).toBeDefined();
      expect(second.pendingPassword).toEqual(first.pendingPassword);
      expect(await a.countUsers()).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
