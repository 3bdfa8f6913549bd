/**
 * Upgrades, run as an operator runs them: databases that older builds left behind (the main of a
 * week ago, d5e9618, from before secrets were encrypted; and the main before this version,
 * 49eb5a9), with a person, clients, an API, rotated keys, a refreshed sign-in and an approved
 * device code in them (test/fixtures/upgrade/generate.ts made them with those builds), are opened
 * by this build's `latchkey serve` on SQLite and on PostgreSQL. The start says what it did (on
 * PostgreSQL, whose numbering before the one migration history differs from it, also that the
 * record was renumbered); what the older build's clients hold keeps working. A database that a
 * newer build upgraded is refused by the server and by the admin commands with one line naming
 * that build.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';
import { decodeProtectedHeader } from 'jose';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { freePort, runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { pgTestUrl } from '../helpers/postgres.js';
import { readMigrations } from '../../src/store/migration_files.js';
import { postgresMigrationsDir, sqliteMigrationsDir } from '../../src/paths.js';

interface Held {
  issuer: string;
  alicePassword: string;
  webappSecret: string;
  refreshToken: string;
  accessToken: string;
  approvedDeviceCode: string;
  secretKey?: string;
}

const fixtures = fileURLToPath(new URL('../fixtures/upgrade/', import.meta.url));
const latest = {
  sqlite: Math.max(...readMigrations(sqliteMigrationsDir).map((m) => m.version)),
  postgres: Math.max(...readMigrations(postgresMigrationsDir).map((m) => m.version)),
};
const pgRequired = process.env.LATCHKEY_REQUIRE_PG === '1';
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A database as the fixture left it, ready for this build: its LATCHKEY_* environment. */
async function restore(
  fixture: string,
  store: 'sqlite' | 'postgres',
): Promise<{ env: Record<string, string>; held: Held; sql: (text: string) => Promise<void> }> {
  const dir = join(fixtures, fixture, store);
  const held = JSON.parse(readFileSync(join(dir, 'held.json'), 'utf8')) as Held;
  // The approved device code lived a day at most; it is moved to now, as if its device polled today.
  const inTenMinutes = Math.floor(Date.now() / 1000) + 600;
  if (store === 'sqlite') {
    const tmp = mkdtempSync(join(tmpdir(), `latchkey-upgrade-${fixture}-`));
    cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
    // An operator's files are the server's alone (a checkout gives the fixtures 0644).
    copyFileSync(join(dir, 'latchkey.db'), join(tmp, 'latchkey.db'));
    chmodSync(join(tmp, 'latchkey.db'), 0o600);
    if (existsSync(join(dir, 'latchkey.db.key'))) {
      copyFileSync(join(dir, 'latchkey.db.key'), join(tmp, 'latchkey.db.key'));
      chmodSync(join(tmp, 'latchkey.db.key'), 0o600);
    }
    const path = join(tmp, 'latchkey.db');
    const run = (text: string) => {
      const db = new Database(path);
      try {
        db.exec(text);
      } finally {
        db.close();
      }
    };
    run(`UPDATE device_grants SET expires_at = ${inTenMinutes} WHERE status = 'approved'`);
    return { env: { LATCHKEY_DB: path }, held, sql: async (text) => run(text) };
  }
  const database = `latchkey_upgrade_${fixture}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgTestUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  cleanups.push(async () => {
    const drop = new pg.Client({ connectionString: pgTestUrl });
    await drop.connect();
    await drop.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await drop.end();
  });
  const url = new URL(pgTestUrl ?? '');
  url.pathname = `/${database}`;
  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };
  await sql(readFileSync(join(dir, 'dump.sql'), 'utf8'));
  // The dump leaves search_path empty for its own session only; this one is new.
  await sql(`UPDATE device_grants SET expires_at = ${inTenMinutes} WHERE status = 'approved'`);
  return { env: { LATCHKEY_DB: url.toString(), LATCHKEY_SECRET_KEY: held.secretKey ?? 'U'.repeat(43) }, held, sql };
}

const post = async (server: ServerProcess, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
  const res = await fetch(server.base + path, { method: 'POST', body: new URLSearchParams(fields), headers });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, string> };
};
const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });

// `from` in the one history's numbers. The SQLite fixtures stopped where the numbering before agrees
// with it (0004, 0013); the PostgreSQL ones are renumbered (their 0002_rate_limits is 0004, their
// 0012_directory_notify 0014).
const renumbering = "Renumbered the database's record of migrations to the one history SQLite and PostgreSQL now share";
const cases = [
  { fixture: 'd5e9618', store: 'sqlite' as const, from: 4, renumbered: false, sealedBefore: false },
  { fixture: 'd5e9618', store: 'postgres' as const, from: 4, renumbered: true, sealedBefore: false },
  { fixture: '49eb5a9', store: 'sqlite' as const, from: 13, renumbered: false, sealedBefore: true },
  { fixture: '49eb5a9', store: 'postgres' as const, from: 14, renumbered: true, sealedBefore: true },
];

describe.runIf(pgRequired && !pgTestUrl)('PostgreSQL for the upgrade tests', () => {
  it('is required here (LATCHKEY_REQUIRE_PG=1) but LATCHKEY_TEST_PG_URL is not set', () => {
    expect(pgTestUrl).toBeDefined();
  });
});

describe.each(cases.filter((c) => c.store === 'sqlite' || pgTestUrl !== undefined))(
  'upgrading the database the main of $fixture left on $store',
  ({ fixture, store, from, renumbered, sealedBefore }) => {
    it('the start says what it did; the person, the clients and the sign-ins of the older build keep working; the second start changes nothing', async () => {
      const { env, held, sql } = await restore(fixture, store);
      env.LATCHKEY_ISSUER = held.issuer;
      // The start as a person at a terminal reads it.
      env.LATCHKEY_LOG_FORMAT = 'text';
      const server = await startServerProcess(env);
      try {
        const output = server.output();
        const names = readMigrations(store === 'sqlite' ? sqliteMigrationsDir : postgresMigrationsDir)
          .filter((m) => m.version > from)
          .map((m) => m.name.replace(/\.sql$/, ''));
        expect(output).toContain(
          `Upgraded the database from schema version ${from} to ${latest[store]}: ${names.join(', ')}; to go back to an older build, restore the backup made before this upgrade`,
        );
        // Going back is said as it is: no build refuses every upgraded database, so the way back is the backup.
        if (renumbered)
          expect(output).toContain(
            `${renumbering}: to go back to an older build, restore the backup made before this upgrade. Builds that check the record refuse this database; the earliest 0.1.0 builds do not check, start on it, and refuse everyone whose password is now stored with Argon2id (see Upgrades in docs/operating.md)`,
          );
        else expect(output).not.toContain(renumbering);
        if (!sealedBefore) expect(output).toMatch(/Encrypted \d+ stored secrets that an older version kept in the clear \(key [A-Za-z0-9_-]{8}\)/);
        if (!sealedBefore && store === 'sqlite') expect(output).toContain(`Created the secret key file ${env.LATCHKEY_DB}.key`);
        expect(output).not.toContain('"level"'); // the terminal gets sentences, not log lines

        // The sign-in the older build refreshed goes on.
        const refreshed = await post(server, '/oauth/token', { grant_type: 'refresh_token', client_id: 'tv', refresh_token: held.refreshToken });
        expect(refreshed.status).toBe(200);
        // The device the person approved before the upgrade gets its tokens.
        const redeemed = await post(server, '/oauth/token', { grant_type: deviceGrantType, client_id: 'tv', device_code: held.approvedDeviceCode });
        expect({ status: redeemed.status, error: redeemed.body.error }).toEqual({ status: 200, error: undefined });
        // The confidential client's secret still authenticates it (RFC 7009 asks a confidential client to).
        expect((await post(server, '/oauth/revoke', { token: 'lk_rt_unknown' }, basic('webapp', held.webappSecret))).status).toBe(200);
        expect((await post(server, '/oauth/revoke', { token: 'lk_rt_unknown' }, basic('webapp', 'lk_cs_wrong'))).status).toBe(401);
        // The person signs in with the password the older build stored.
        const device = await post(server, '/oauth/device/code', { client_id: 'tv', scope: 'openid' });
        const page = await actOnDeviceCode(
          new Browser(fetchTransport(server.base)),
          `/activate?user_code=${device.body.user_code}`,
          { username: 'alice', password: held.alicePassword },
          'allow',
        );
        expect(page.status).toBe(200);
        // The keys the older build signed with are still published (its tokens verify until they expire).
        const jwks = (await (await fetch(`${server.base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
        expect(jwks.keys.map((k) => k.kid)).toContain(decodeProtectedHeader(held.accessToken).kid);
        // The admin commands read it too.
        const users = await runCli(['users', 'list', '--json'], { ...env, LATCHKEY_ISSUER: held.issuer });
        expect(users.code, users.stderr).toBe(0);
        expect((JSON.parse(users.stdout) as { username: string }[]).map((u) => u.username)).toContain('alice');
      } finally {
        await server.stop();
      }

      const again = await startServerProcess({ ...env, LATCHKEY_ISSUER: held.issuer });
      try {
        expect(again.output()).not.toContain('Upgraded the database');
        expect(again.output()).not.toContain(renumbering);
        expect(again.output()).not.toContain('Encrypted');
      } finally {
        await again.stop();
      }

      // Later a newer build upgrades it, and this one is started on it by mistake.
      await sql("INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (999, '0999_later.sql', 1, 'x', '9.9.9')");
      const refusal = new RegExp(
        `^latchkey: LATCHKEY_DB: cannot open the database .*: the database was upgraded by Latchkey 9\\.9\\.9 \\(schema version 999, 0999_later\\.sql\\); this is Latchkey [0-9.]+, which knows schema versions up to ${latest[store]}: run Latchkey 9\\.9\\.9 or newer, or restore the backup made before the upgrade\\n$`,
      );
      const serve = await runCli(['serve'], { ...env, PORT: String(await freePort()) });
      expect(serve.code).toBe(3);
      expect(serve.stderr).toMatch(refusal);
      const list = await runCli(['users', 'list'], env);
      expect(list.code).toBe(3);
      expect(list.stderr).toMatch(refusal);
    }, 60_000);
  },
);

describe.each(cases.filter((c) => !c.sealedBefore && (c.store === 'sqlite' || pgTestUrl !== undefined)))(
  'an admin command first, on the database the main of $fixture left on $store',
  ({ fixture, store, from, renumbered }) => {
    it('upgrades it, encrypts what was in the clear and says so; the server then starts on it', async () => {
      const { env, held } = await restore(fixture, store);
      env.LATCHKEY_ISSUER = held.issuer;
      const rotate = await runCli(['keys', 'rotate'], env);
      expect(rotate.code, rotate.stderr).toBe(0);
      expect(rotate.stderr).toContain(`Upgraded the database from schema version ${from} to ${latest[store]}`);
      if (renumbered) expect(rotate.stderr).toContain(renumbering);
      expect(rotate.stderr).toMatch(/Encrypted \d+ stored secrets that an older version kept in the clear/);
      const server = await startServerProcess(env);
      try {
        expect(server.output()).not.toContain('Upgraded the database');
        const refreshed = await post(server, '/oauth/token', { grant_type: 'refresh_token', client_id: 'tv', refresh_token: held.refreshToken });
        expect(refreshed.status).toBe(200);
      } finally {
        await server.stop();
      }
    }, 60_000);
  },
);
