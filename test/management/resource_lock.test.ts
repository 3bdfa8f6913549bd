/**
 * If-Match holds across server instances: two instances sharing one database (a SQLite file, a
 * PostgreSQL schema), each asked at the same moment to change the same client with the same ETag,
 * answer exactly one 200 and one 412. A lease left by a crashed holder is taken over once expired;
 * one held by a live holder makes a waiting request answer 503 with Retry-After, never hang.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { manualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { addClient, testApp } from '../helpers/app.js';
import { managementHarness, type ManagementServer } from '../helpers/management.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Two instances on one SQLite file, each opened as the server opens its store. */
async function twoSqliteInstances(): Promise<ManagementServer[]> {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-lock-'));
  closers.push(async () => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'latchkey.db');
  const first = await testApp({}, { path });
  closers.push(() => first.close());
  const second = await testApp({}, { path });
  closers.push(() => second.close());
  return [first, second];
}

/** Two instances on one PostgreSQL schema, as two machines behind a load balancer would be. */
async function twoPostgresInstances(): Promise<ManagementServer[]> {
  const schema = freshSchema();
  const clock = manualClock();
  const config = configFrom({
    LATCHKEY_ISSUER: 'http://latchkey.test',
    LATCHKEY_SECRET_KEY: 'K'.repeat(43),
    LATCHKEY_BOOTSTRAP_PASSWORD: 'bootstrap-password',
  });
  // Each opened as the server opens it (store/open.ts): the directory cache, and time limits on transactions.
  const open = () => PostgresStore.open({ url: pgTestUrl!, schema, directoryCache: true, transactionDeadline: true });
  const servers: ManagementServer[] = [];
  for (let i = 0; i < 2; i++) {
    const store = await open();
    if (i === 0) await bootstrap(store, config, clock);
    const app = await buildApp({ config, store, clock, logger: false, sleep: async () => undefined });
    await app.ready();
    closers.push(async () => {
      await app.close();
      await store.close();
    });
    servers.push({ app, store, config });
  }
  return servers;
}

/**
 * Each round: both instances PATCH client `web` at once with the ETag just read. Several rounds, so
 * that a lock which does not span instances is caught even when one round happens not to interleave.
 */
async function raceOverInstances(servers: ManagementServer[]): Promise<void> {
  const [one, two] = servers as [ManagementServer, ManagementServer];
  await addClient(one.store, 'web');
  const callers = [await managementHarness(one, undefined, 'robot-one'), await managementHarness(two, undefined, 'robot-two')];
  for (let round = 0; round < 5; round++) {
    const read = await callers[0]!.call('GET', '/api/v1/clients/web');
    expect(read.statusCode).toBe(200);
    const etag = read.headers.etag as string;
    const answers = await Promise.all(
      callers.map((caller, i) => caller.call('PATCH', '/api/v1/clients/web', { body: { name: `Web ${round}.${i}` }, headers: { 'if-match': etag } })),
    );
    expect(answers.map((a) => a.statusCode).sort(), `round ${round}`).toEqual([200, 412]);
    const winner = answers.find((a) => a.statusCode === 200)!.json<{ name: string }>().name;
    // What the winner wrote is what both instances now read.
    for (const caller of callers) expect((await caller.call('GET', '/api/v1/clients/web')).json<{ name: string }>().name).toBe(winner);
  }
}

describe('If-Match across instances', () => {
  it('two instances on one SQLite file, the same ETag at the same time: exactly one 200, the other 412', async () => {
    await raceOverInstances(await twoSqliteInstances());
  });
});

describeWithPostgres('If-Match across instances on PostgreSQL', () => {
  it('two instances on one PostgreSQL schema, the same ETag at the same time: exactly one 200, the other 412', async () => {
    await raceOverInstances(await twoPostgresInstances());
  });

  it('on PostgreSQL, a lease left by a crashed instance is taken over once expired: the change goes through', async () => {
    const [one] = await twoPostgresInstances();
    await addClient(one!.store, 'web');
    const { call } = await managementHarness(one!);
    await one!.store.takeResourceLease('client:web', 'crashed-instance', (await one!.store.databaseTime()) - 1);
    const res = await call('PATCH', '/api/v1/clients/web', { body: { name: 'After the crash' } });
    expect(res.statusCode).toBe(200);
    expect(res.json<{ name: string }>().name).toBe('After the crash');
  });
});

describe('a lease held elsewhere', () => {
  it('a lease left by a crashed instance is taken over once expired: the change goes through', async () => {
    const t = await testApp();
    closers.push(() => t.close());
    await addClient(t.store, 'web');
    const { call } = await managementHarness(t);
    await t.store.takeResourceLease('client:web', 'crashed-instance', (await t.store.databaseTime()) - 1);
    const res = await call('PATCH', '/api/v1/clients/web', { body: { name: 'After the crash' } });
    expect(res.statusCode).toBe(200);
    expect(res.json<{ name: string }>().name).toBe('After the crash');
  });

  it('a lease another instance holds makes the change wait, then answers 503 with Retry-After (no hang); other clients are not held up', async () => {
    const t = await testApp();
    closers.push(() => t.close());
    await addClient(t.store, 'web');
    await addClient(t.store, 'other');
    const { call } = await managementHarness(t);
    await t.store.takeResourceLease('client:web', 'busy-instance', (await t.store.databaseTime()) + 60);
    const started = Date.now();
    const res = await call('PATCH', '/api/v1/clients/web', { body: { name: 'Blocked' } });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.json()).toMatchObject({ status: 503, type: '/docs/management-api#busy' });
    // It waited for the lease (a few seconds), then gave up: bounded.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect((await call('GET', '/api/v1/clients/web')).json<{ name: string }>().name).not.toBe('Blocked');
    expect((await call('PATCH', '/api/v1/clients/other', { body: { name: 'Free' } })).statusCode).toBe(200);
    // Once given back, the change goes through.
    expect(await t.store.releaseResourceLease('client:web', 'busy-instance')).toBe(true);
    expect((await call('PATCH', '/api/v1/clients/web', { body: { name: 'Now' } })).statusCode).toBe(200);
  });

  it('a database that cannot take the lease (locked by another process) is a 503 problem, not a 500', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-lock-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'latchkey.db');
    const t = await testApp({}, { path });
    closers.push(() => t.close());
    await addClient(t.store, 'web');
    const { call } = await managementHarness(t);
    const busy = holdSqliteWriteLock(path);
    try {
      const res = await call('PATCH', '/api/v1/clients/web', { body: { name: 'Locked out' } });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: 503 });
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      busy();
    }
  });
});

/** Another connection holds the database file's write lock, as another process would: the store's writes meet SQLITE_BUSY. */
function holdSqliteWriteLock(path: string): () => void {
  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  return () => {
    other.exec('ROLLBACK');
    other.close();
  };
}
