/**
 * Limits under parallel load: many requests at once must not slip past a limit
 * because each was checked before any was counted. On SQLite (one instance, counted in memory) and
 * on PostgreSQL (two instances sharing the counters in the database, each request counted and
 * decided in one statement).
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { bootstrap } from '../../src/bootstrap.js';
import { manualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { form, testApp } from '../helpers/app.js';
import { Browser, injectTransport, inputValue, signIn } from '../helpers/browser.js';
import { hashPassword } from '../../src/crypto/password.js';

/** 60 wrong user codes at once from one address, spread over the given apps. */
async function wrongCodesAtOnce(apps: FastifyInstance[]): Promise<number[]> {
  const browsers = apps.map((app) => new Browser(injectTransport(app)));
  const pages = await Promise.all(browsers.map((b) => b.get('/activate')));
  return Promise.all(
    Array.from({ length: 60 }, async (_, n) => {
      const i = n % apps.length;
      const res = await browsers[i]!.post('/activate', { csrf_token: inputValue(pages[i]!.body, 'csrf_token')!, user_code: 'BCDF-GHJK' });
      return res.status;
    }),
  );
}

describe('SQLite: one instance', () => {
  it('60 wrong user codes at once: exactly 10 are answered "wrong code", the other 50 get 429', async () => {
    const t = await testApp();
    try {
      const statuses = await wrongCodesAtOnce([t.app]);
      expect(statuses.filter((s) => s === 400)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    } finally {
      await t.close();
    }
  });

  it('a right code does not use up the budget', async () => {
    const t = await testApp({ LATCHKEY_RATE_LIMIT_USER_CODE: '2/60' });
    try {
      const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'latchkey-cli' }) })).json();
      const browser = new Browser(injectTransport(t.app));
      for (let i = 0; i < 5; i++) {
        const page = await browser.get('/activate');
        const res = await browser.post('/activate', { csrf_token: inputValue(page.body, 'csrf_token')!, user_code: device.user_code });
        expect(res.status).toBe(303);
      }
      const page = await browser.get('/activate');
      expect((await browser.post('/activate', { csrf_token: inputValue(page.body, 'csrf_token')!, user_code: 'BCDF-GHJK' })).status).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describeWithPostgres('PostgreSQL: two instances sharing the counters', () => {
  /** Two server instances (apps) on one fresh schema, as two machines behind a load balancer would be. */
  async function twoInstances(env: Record<string, string> = {}) {
    const schema = freshSchema();
    const clock = manualClock();
    const config = configFrom({
      LATCHKEY_ISSUER: 'http://latchkey.test',
      LATCHKEY_SECRET_KEY: 'K'.repeat(43),
      LATCHKEY_BOOTSTRAP_PASSWORD: 'bootstrap-password',
      ...env,
    });
    // Each opened as the server opens it (store/open.ts): the directory cache, and time limits on transactions.
    const open = () => PostgresStore.open({ url: pgTestUrl!, schema, directoryCache: true, transactionDeadline: true });
    const stores = [await open(), await open()];
    await bootstrap(stores[0]!, config, clock);
    const apps = await Promise.all(stores.map((store) => buildApp({ config, store, clock, logger: false, sleep: async () => undefined })));
    return {
      apps,
      schema,
      store: stores[0]!,
      async close() {
        for (const app of apps) await app.close();
        for (const store of stores) await store.close();
      },
    };
  }

  it('60 wrong user codes at once over both: exactly 10 are answered "wrong code", the other 50 get 429', async () => {
    const instances = await twoInstances();
    try {
      const statuses = await wrongCodesAtOnce(instances.apps);
      expect(statuses.filter((s) => s === 400)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    } finally {
      await instances.close();
    }
  });

  it('a username with U+0000 is a wrong password, not a 500; the counters never hold what was typed', async () => {
    const instances = await twoInstances();
    try {
      const browser = new Browser(injectTransport(instances.apps[0]!));
      for (const username of ['ali\u0000ce', 'my-secret-password']) {
        const res = await signIn(browser, await browser.get('/login'), username, 'whatever-pass');
        expect(res.status).toBe(401);
      }
      const pool = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
      try {
        const schema = instances.schema;
        const rows = await pool.query(`SELECT bucket, key FROM ${schema}.rate_limit_counters`);
        expect(rows.rows.length).toBeGreaterThan(0);
        expect(JSON.stringify(rows.rows)).not.toContain('my-secret-password');
        expect(JSON.stringify(rows.rows)).not.toContain('ali');
      } finally {
        await pool.end();
      }
    } finally {
      await instances.close();
    }
  });

  it('30 wrong passwords at once over both: at most the limit get a password checked', async () => {
    const instances = await twoInstances();
    try {
      await instances.store.createUser({
        id: 'user-alice',
        username: 'alice',
        email: 'alice@example.com',
        name: undefined,
        passwordHash: await hashPassword('alice-password'),
        disabled: false,
        createdAt: 1_800_000_000,
        tokensRevokedAt: undefined,
        source: 'local',
        emailVerified: true,
        groups: [],
        roles: [],
        profile: {},
        updatedAt: 1_800_000_000,
      });
      const browsers = instances.apps.map((app) => new Browser(injectTransport(app)));
      const pages = await Promise.all(browsers.map((b) => b.get('/login')));
      const statuses = await Promise.all(
        Array.from({ length: 30 }, async (_, n) => (await signIn(browsers[n % 2]!, pages[n % 2]!, 'alice', 'wrong-guess')).status),
      );
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(25);
    } finally {
      await instances.close();
    }
  });
});
