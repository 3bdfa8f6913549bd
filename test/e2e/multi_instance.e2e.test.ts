/**
 * Several instances behind one proxy: two `latchkey serve` processes started at the same moment on
 * one fresh PostgreSQL database (LATCHKEY_TEST_PG_URL; `npm run test:pg` and .ci/run provide one).
 * A device flow is started on one, approved through the other's pages, polled on both, and
 * redeemed by racing requests to both: exactly one token response. Rate limits hold across the two.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

const baseUrl = process.env.LATCHKEY_TEST_PG_URL;
const required = process.env.LATCHKEY_REQUIRE_PG === '1';

describe.runIf(required && !baseUrl)('PostgreSQL for the multi-instance test', () => {
  it('is required here (LATCHKEY_REQUIRE_PG=1) but LATCHKEY_TEST_PG_URL is not set', () => {
    expect(baseUrl).toBeDefined();
  });
});

describe.skipIf(!baseUrl)('two instances on one PostgreSQL database', () => {
  const database = `latchkey_e2e_${randomBytes(6).toString('hex')}`;
  let env: Record<string, string>;
  let a: ServerProcess;
  let b: ServerProcess;

  async function admin<T>(work: (client: pg.Client) => Promise<T>, url = baseUrl ?? ''): Promise<T> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  const post = async (server: ServerProcess, path: string, fields: Record<string, string>) => {
    const res = await fetch(server.base + path, { method: 'POST', body: new URLSearchParams(fields) });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };

  beforeAll(async () => {
    await admin((client) => client.query(`CREATE DATABASE ${database}`));
    const url = new URL(baseUrl ?? '');
    url.pathname = `/${database}`;
    // One issuer for both, as behind one load balancer: a token from either verifies on the other.
    // Every instance shares the key that encrypts the server secrets in the database.
    env = {
      LATCHKEY_DB: url.toString(),
      LATCHKEY_SECRET_KEY: 'K'.repeat(43),
      LATCHKEY_ISSUER: 'http://id.latchkey.test',
      LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: '4/60',
      LATCHKEY_REFRESH_REUSE_GRACE: '0',
    };
    // Both start at once on the empty database: one applies the migrations, the other waits for it.
    [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    const add = await runCli(['users', 'add', 'grace', '--email', 'grace@example.com', '--password-stdin'], env, 'grace-password\n');
    expect(add.code, add.stderr).toBe(0);
    const client = await runCli(['clients', 'add', 'kiosk', '--grant-type', 'device_code'], env);
    expect(client.code, client.stderr).toBe(0);
  }, 60_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    if (baseUrl) await admin((client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  });

  it('started together on an empty database: each migration applied once, one first user, one set of keys', async () => {
    const url = new URL(baseUrl ?? '');
    url.pathname = `/${database}`;
    await admin(async (client) => {
      const migrations = await client.query('SELECT version, count(*) AS n FROM schema_migrations GROUP BY version');
      expect(migrations.rows.length).toBeGreaterThan(0);
      for (const row of migrations.rows) expect(Number(row.n)).toBe(1);
    }, url.toString());
    expect([a.output(), b.output()].filter((output) => output.includes('Created the first user'))).toHaveLength(1);
    const jwksA = await (await fetch(`${a.base}/.well-known/jwks.json`)).json();
    const jwksB = await (await fetch(`${b.base}/.well-known/jwks.json`)).json();
    expect(jwksA).toEqual(jwksB);
    expect(jwksA.keys).toHaveLength(1);
  });

  it('a device flow started on A, approved through B, polled on both; racing redemptions on both give one token response', async () => {
    const device = await post(a, '/oauth/device/code', { client_id: 'latchkey-cli', scope: 'openid offline_access' });
    expect(device.status).toBe(200);
    const poll = { grant_type: deviceGrantType, device_code: device.body.device_code ?? '', client_id: 'latchkey-cli' };
    expect((await post(b, '/oauth/token', poll)).body.error).toBe('authorization_pending');

    const page = await actOnDeviceCode(
      new Browser(fetchTransport(b.base)),
      `/activate?user_code=${device.body.user_code}`,
      { username: 'grace', password: 'grace-password' },
      'allow',
    );
    expect(page.status).toBe(200);
    // At once, sooner than the interval: an approved grant is handed out even to an impatient poll
    // (slow_down is for pending ones, RFC 8628 §3.5).
    const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => post(i % 2 === 0 ? a : b, '/oauth/token', poll)));
    const issued = answers.filter((answer) => answer.status === 200);
    expect(issued).toHaveLength(1);
    for (const other of answers.filter((answer) => answer.status !== 200)) expect(['invalid_grant', 'slow_down']).toContain(other.body.error);

    // The tokens work on both instances, and a refresh on one rotates for both.
    const tokens = issued[0]?.body ?? {};
    for (const server of [a, b]) {
      const res = await fetch(`${server.base}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect({ server: server.base, status: res.status, challenge: res.headers.get('www-authenticate') }).toMatchObject({ status: 200 });
    }
    const refreshed = await post(b, '/oauth/token', { grant_type: 'refresh_token', client_id: 'latchkey-cli', refresh_token: tokens.refresh_token ?? '' });
    expect(refreshed.status).toBe(200);
    // The client rotates on from B; the old token replayed on A is then theft (no grace window here:
    // LATCHKEY_REFRESH_REUSE_GRACE=0).
    const onwards = await post(b, '/oauth/token', {
      grant_type: 'refresh_token',
      client_id: 'latchkey-cli',
      refresh_token: refreshed.body.refresh_token ?? '',
    });
    expect(onwards.status).toBe(200);
    const replayed = await post(a, '/oauth/token', { grant_type: 'refresh_token', client_id: 'latchkey-cli', refresh_token: tokens.refresh_token ?? '' });
    expect(replayed.body.error).toBe('invalid_grant');
    // Reuse detected on A revoked the family B rotated into.
    const successor = await post(b, '/oauth/token', {
      grant_type: 'refresh_token',
      client_id: 'latchkey-cli',
      refresh_token: onwards.body.refresh_token ?? '',
    });
    expect(successor.body.error).toBe('invalid_grant');
  }, 40_000);

  it('a sign-in on A is a sign-in on B: the session lives in the database', async () => {
    const browser = new Browser(fetchTransport(a.base));
    const login = await browser.get('/login');
    expect(login.status).toBe(200);
    const device = await post(b, '/oauth/device/code', { client_id: 'latchkey-cli' });
    // Sign in through A's pages, then act on B with the same cookies.
    await actOnDeviceCode(browser, `/activate?user_code=${device.body.user_code}`, { username: 'grace', password: 'grace-password' }, 'deny');
    const onB = new Browser(fetchTransport(b.base));
    for (const [name, value] of browser.cookies) onB.cookies.set(name, value);
    const second = await post(a, '/oauth/device/code', { client_id: 'latchkey-cli' });
    const entry = await onB.get(`/activate?user_code=${second.body.user_code}`);
    expect(entry.status).toBe(200);
    expect(entry.body).toContain('Signed in as <strong>grace</strong>');
  });

  it('rate limits hold across instances: the budget of 4 device authorizations is shared', async () => {
    const statuses: number[] = [];
    for (const server of [a, b, a, b, a, b]) statuses.push((await post(server, '/oauth/device/code', { client_id: 'kiosk' })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });
});
