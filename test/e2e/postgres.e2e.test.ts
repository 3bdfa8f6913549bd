/**
 * The built executable on PostgreSQL, as an operator would run it: LATCHKEY_DB a postgres:// URL,
 * admin commands and `latchkey serve` (two of them, as two instances behind a load balancer) on the
 * same database, the device flow across both, and the URL's password never printed.
 *
 * Needs LATCHKEY_TEST_PG_URL, like test/store/postgres_conformance.test.ts; skipped without it
 * unless LATCHKEY_REQUIRE_PG=1. Runs in a fresh schema (chosen through the URL's options), dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

const url = process.env.LATCHKEY_TEST_PG_URL?.trim() || undefined;
const required = process.env.LATCHKEY_REQUIRE_PG === '1';
const schema = `latchkey_e2e_${randomBytes(6).toString('hex')}`;
/** A password the test server ignores (trust authentication) but that must never be shown. */
const password = 'hunter2-not-for-display';

function databaseUrl(): string {
  const withSchema = new URL(url!);
  withSchema.password = password;
  withSchema.searchParams.set('options', `-c search_path=${schema}`);
  return withSchema.toString();
}

if (!url && required) {
  describe('latchkey on PostgreSQL', () => {
    it('has a database to run against (LATCHKEY_REQUIRE_PG=1)', () => {
      expect.fail('LATCHKEY_REQUIRE_PG=1 but LATCHKEY_TEST_PG_URL is not set');
    });
  });
}

(url ? describe : describe.skip)('latchkey on PostgreSQL (LATCHKEY_TEST_PG_URL)', () => {
  let env: Record<string, string>;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    env = { LATCHKEY_DB: databaseUrl(), LATCHKEY_SECRET_KEY: 'K'.repeat(43), LATCHKEY_DEVICE_INTERVAL: '1' };
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    const admin = new pg.Pool({ connectionString: url, max: 1 });
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });

  it('admin commands work on the database named by the URL', async () => {
    const add = await runCli(['users', 'add', 'bob', '--email', 'bob@example.com', '--password-stdin'], env, 'bob-password\n');
    expect(add.stderr).toContain('Created user bob');
    expect(add.code).toBe(0);
    const dup = await runCli(['users', 'add', 'BOB', '--email', 'b@example.com', '--password-stdin'], env, 'whatever-pass');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe('latchkey: user "BOB" already exists\n');
    expect((await runCli(['clients', 'add', 'kiosk', '--grant-type', 'device_code'], env)).code).toBe(0);
    const users = JSON.parse((await runCli(['users', 'list', '--json'], env)).stdout) as { username: string }[];
    expect(users.map((u) => u.username)).toEqual(['bob']);
  });

  it('two servers on one database: the device flow started on one completes on the other; the banner hides the password', async () => {
    servers.push(await startServerProcess(env), await startServerProcess(env));
    const [first, second] = servers as [ServerProcess, ServerProcess];
    for (const server of servers) {
      expect(server.output()).toMatch(/database postgres(ql)?:\/\/[^ ]*:\*\*\*@/);
      expect(server.output()).not.toContain(password);
      expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
    }

    const post = async (base: string, path: string, fields: Record<string, string>) => {
      const res = await fetch(base + path, { method: 'POST', body: new URLSearchParams(fields) });
      return { status: res.status, body: (await res.json()) as Record<string, string | number> };
    };
    const device = await post(first.base, '/oauth/device/code', { client_id: 'kiosk', scope: 'openid profile' });
    expect(device.status).toBe(200);
    const browser = new Browser(fetchTransport(second.base));
    const approval = await actOnDeviceCode(browser, `/activate?user_code=${device.body.user_code}`, { username: 'bob', password: 'bob-password' }, 'allow');
    expect(approval.status).toBe(200);

    // Both instances redeem the approved code at once: exactly one gets the tokens.
    const answers = await Promise.all(
      [first, second].map((server) =>
        post(server.base, '/oauth/token', { grant_type: deviceGrantType, device_code: String(device.body.device_code), client_id: 'kiosk' }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.find((a) => a.status === 200)?.body).toMatchObject({ token_type: 'Bearer', scope: 'openid profile' });
  });

  it('a database that refuses the connection stops serve with one line naming LATCHKEY_DB, without the password', async () => {
    const unreachable = new URL(databaseUrl());
    unreachable.hostname = '127.0.0.1';
    unreachable.port = '1';
    const res = await runCli(['serve'], { LATCHKEY_DB: unreachable.toString(), LATCHKEY_SECRET_KEY: 'K'.repeat(43) });
    expect(res.code).toBe(3);
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
    expect(res.stderr).toMatch(/^latchkey: LATCHKEY_DB: cannot open the database postgres(ql)?:\/\/[^ ]*:\*\*\*@127\.0\.0\.1:1\//);
    expect(res.stderr).not.toContain(password);
  });
});
