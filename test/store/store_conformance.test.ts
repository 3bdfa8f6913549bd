/**
 * Runs the Store conformance suite (test/store/conformance.ts) against SQLite, in memory and on a
 * real file, then checks what only SQLite has: the migration runner and the connection pragmas.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { manualClock } from '../../src/clock.js';
import { purgeAll, reclaimAll } from '../../src/housekeeping.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { migrate, readMigrations } from '../../src/store/sqlite/migrate.js';
import { sqliteMigrationsDir } from '../../src/paths.js';
import { storeConformance, t0, user } from './conformance.js';
import { api, authorizationCode, client, passkey, refreshToken, session } from '../helpers/records.js';

// ─── Implementations ────────────────────────────────────────────────────────────────────────

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-store-'));
  tempDirs.push(dir);
  return join(dir, 'latchkey.db');
}

storeConformance('SQLite :memory:', async () => new SqliteStore({ path: ':memory:', now: t0 }));
storeConformance('SQLite file', async () => new SqliteStore({ path: tempDbPath(), now: t0 }));
storeConformance(
  'SQLite file as the server opens it (group commit, background checkpoints)',
  async () => new SqliteStore({ path: tempDbPath(), now: t0, groupCommit: true, backgroundCheckpoints: true }),
);

describe('SqliteStore specifics', () => {
  const migrationNames = readMigrations(sqliteMigrationsDir).map((m) => m.name);

  it('the migrations folder starts with 0001_init.sql', () => {
    expect(migrationNames[0]).toBe('0001_init.sql');
  });

  it('records every applied migration in schema_migrations', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames);
      const rows = store.db.prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version').all();
      expect(rows).toEqual(migrationNames.map((name) => ({ version: Number(name.slice(0, 4)), name, applied_at: t0 })));
    } finally {
      await store.close();
    }
  });

  it('reopening the same file applies nothing again and keeps the data', async () => {
    const path = tempDbPath();
    const first = new SqliteStore({ path, now: t0 });
    try {
      expect(first.appliedMigrations).toEqual(migrationNames);
      await first.createUser(user());
    } finally {
      await first.close();
    }
    const second = new SqliteStore({ path, now: t0 + 100 });
    try {
      expect(second.appliedMigrations).toEqual([]);
      expect(await second.findUserByUsername('alice')).toEqual(user());
      const appliedAt = second.db.prepare('SELECT DISTINCT applied_at FROM schema_migrations').all();
      expect(appliedAt).toEqual([{ applied_at: t0 }]);
    } finally {
      await second.close();
    }
  });

  it('a file store runs in WAL mode with foreign keys on', async () => {
    const store = new SqliteStore({ path: tempDbPath(), now: t0 });
    try {
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000);
    } finally {
      await store.close();
    }
  });

  it('a :memory: store has foreign keys on', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('creates missing parent folders for a file store', async () => {
    const path = join(tempDbPath().replace(/latchkey\.db$/, ''), 'nested', 'deeper', 'db.sqlite');
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("upgrading to connectors (0006): the first administrator's made-up admin@localhost is not a verified email; real ones are", async () => {
    const path = tempDbPath();
    const db = new Database(path);
    const all = readMigrations(sqliteMigrationsDir);
    migrate(
      db,
      all.filter((m) => m.version < 6),
      t0,
    );
    const insert = db.prepare('INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES (?, ?, ?, NULL, ?, 0, ?)');
    insert.run('u1', 'admin', 'admin@localhost', 'scrypt$x', t0);
    insert.run('u2', 'alice', 'alice@example.com', 'scrypt$x', t0);
    migrate(db, all, t0);
    expect(db.prepare('SELECT username, email_verified, source FROM users ORDER BY username').all()).toEqual([
      { username: 'admin', email_verified: 0, source: 'local' },
      { username: 'alice', email_verified: 1, source: 'local' },
    ]);
    db.close();
  });

  it("upgrading to second factors (0007): sessions, codes, refresh tokens and device grants made before read amr [] and acrValues ''", async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 7),
      t0,
    );
    db.prepare(
      "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', 0, ?)",
    ).run(t0);
    db.prepare(
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
                VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', 1, 0, 0, ?)`,
    ).run(t0);
    db.prepare("INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at) VALUES ('old-session', 'user-alice', ?, ?, ?)").run(
      t0,
      t0,
      t0 + 3600,
    );
    db.prepare(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, created_at, expires_at)
                VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', ?, ?, ?)`,
    ).run(t0, t0, t0 + 60);
    db.prepare(
      `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at)
                VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', ?, ?, ?, ?)`,
    ).run(t0, t0, t0 + 60, t0 + 60);
    db.prepare(
      `INSERT INTO device_grants (id, device_code_hash, user_code_hash, client_id, scope, audience, status, poll_interval, user_id, auth_time,
                  requester_ip, requester_user_agent, created_at, expires_at, decided_at)
                VALUES ('old-grant', 'old-device', 'old-user', 'cli', 'openid', 'https://api.example.com', 'approved', 5, 'user-alice', ?, '203.0.113.9', 'cli', ?, ?, ?)`,
    ).run(t0, t0, t0 + 900, t0);
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 7));
      expect((await store.findSession('old-session', t0))?.amr).toEqual([]);
      expect((await store.findAuthorizationCode('old-code'))?.amr).toEqual([]);
      expect((await store.findRefreshToken('old-rt'))?.amr).toEqual([]);
      expect(await store.findDeviceGrantByDeviceCode('old-device')).toMatchObject({ amr: [], acrValues: '', status: 'approved' });
      expect(await store.findTotp('user-alice')).toBeUndefined();
      expect(await store.listPasskeys('user-alice')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('upgrading to accounts (0008): every session made before gets a public id of its own, and so does one a previous version still inserts', async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 8),
      t0,
    );
    db.prepare(
      "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', 0, ?)",
    ).run(t0);
    db.prepare(
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
                VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', 1, 0, 0, ?)`,
    ).run(t0);
    const insertSession = db.prepare(
      "INSERT INTO sessions (id_hash, user_id, auth_time, amr, created_at, expires_at, interaction_id) VALUES (?, 'user-alice', ?, 'pwd', ?, ?, ?)",
    );
    insertSession.run('old-1', t0, t0, t0 + 3600, 'interaction-1');
    insertSession.run('old-2', t0, t0 + 1, t0 + 3600, null);
    db.prepare(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, amr, created_at, expires_at)
                VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', ?, 'pwd', ?, ?)`,
    ).run(t0, t0, t0 + 60);
    db.prepare(
      `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, amr, created_at, expires_at, family_expires_at)
                VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', ?, 'pwd', ?, ?, ?)`,
    ).run(t0, t0, t0 + 60, t0 + 60);
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 8));
      const [second, first] = await store.listSessions('user-alice', t0);
      expect(first?.id).toMatch(/^[0-9a-f]{32}$/);
      expect(second?.id).toMatch(/^[0-9a-f]{32}$/);
      expect(first?.id).not.toBe(second?.id);
      expect(await store.findSession('old-1', t0)).toStrictEqual({
        idHash: 'old-1',
        userId: 'user-alice',
        authTime: t0,
        amr: ['pwd'],
        createdAt: t0,
        expiresAt: t0 + 3600,
        interactionId: 'interaction-1',
        id: first?.id,
        ip: undefined,
        userAgent: undefined,
        lastSeenAt: undefined,
      });
      expect((await store.endSessionById(second!.id, 'user-alice'))?.idHash).toBe('old-2');
      expect(await store.findAuthorizationCode('old-code')).toMatchObject({
        amr: ['pwd'],
        approvedIp: undefined,
        approvedUserAgent: undefined,
        sessionId: undefined,
      });
      expect(await store.findRefreshToken('old-rt')).toMatchObject({ amr: ['pwd'], approvedIp: undefined, approvedUserAgent: undefined, sessionId: undefined });
      expect((await store.listRefreshFamilies('user-alice', t0)).map((f) => [f.familyId, f.approvedIp])).toEqual([['old-family', undefined]]);
      // A process of the previous version, still running beside the one that migrated, inserts no public id.
      store.db
        .prepare(
          "INSERT INTO sessions (id_hash, user_id, auth_time, amr, created_at, expires_at, interaction_id) VALUES ('from-old-version', 'user-alice', ?, 'pwd', ?, ?, NULL)",
        )
        .run(t0, t0, t0 + 3600);
      expect((await store.findSession('from-old-version', t0))?.id).toMatch(/^[0-9a-f]{32}$/);
      // The rebuilt table is still STRICT, indexed, and goes with its user.
      expect(store.db.prepare("SELECT strict FROM pragma_table_list WHERE name = 'sessions'").get()).toEqual({ strict: 1 });
      const indexes = store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' AND sql IS NOT NULL ORDER BY name").all();
      expect(indexes).toEqual([{ name: 'sessions_expires_at' }, { name: 'sessions_public_id' }, { name: 'sessions_user' }]);
      store.db.prepare("DELETE FROM users WHERE id = 'user-alice'").run();
      expect(await store.listSessions(undefined, t0)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('upgrading to roles (0009): users hold no roles, APIs declare no scopes, clients keep their secret and are enabled without keys, and the admin role is there', async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 9),
      t0,
    );
    db.prepare(
      "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', 0, ?)",
    ).run(t0);
    db.prepare(
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
                VALUES ('svc', 'Service', 'sha256-old', '[]', '["authorization_code"]', 0, 0, 0, ?)`,
    ).run(t0);
    db.prepare("INSERT INTO apis (identifier, name, created_at, introspection_clients) VALUES ('https://api.example.com', 'API', ?, '[\"svc\"]')").run(t0);
    db.close();
    const before = Math.floor(Date.now() / 1000);
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 9));
      expect(await store.findUserById('user-alice')).toMatchObject({ username: 'alice', roles: [] });
      expect(await store.findApi('https://api.example.com')).toStrictEqual({
        identifier: 'https://api.example.com',
        name: 'API',
        createdAt: t0,
        introspectionClients: ['svc'],
        scopes: [],
        managedBy: undefined,
      });
      expect(await store.findClient('svc')).toMatchObject({
        secretHash: 'sha256-old',
        grantTypes: ['authorization_code'],
        jwksUri: undefined,
        jwks: undefined,
        secretSealed: undefined,
        previousSecretHash: undefined,
        previousSecretSealed: undefined,
        previousSecretExpiresAt: undefined,
        disabled: false,
      });
      const admin = await store.findRole('admin');
      expect(admin).toMatchObject({ name: 'admin', description: 'May use the admin console', builtIn: true, permissions: [], members: 0 });
      expect(admin!.createdAt).toBeGreaterThanOrEqual(before - 5);
      expect(admin!.createdAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 5);
      expect(await store.grantRole('user-alice', 'admin', t0)).toBe(true);
      expect((await store.findUserById('user-alice'))?.roles).toEqual(['admin']);
      expect(await store.listAuditEvents({ limit: 10 })).toEqual([]);
      // The new tables are STRICT, and a user's grants go with the user.
      for (const table of ['roles', 'role_permissions', 'user_roles', 'client_grants', 'used_once', 'audit_events']) {
        expect(store.db.prepare('SELECT strict FROM pragma_table_list WHERE name = ?').get(table), table).toEqual({ strict: 1 });
      }
      store.db.prepare("DELETE FROM users WHERE id = 'user-alice'").run();
      expect(await store.findRole('admin')).toMatchObject({ members: 0 });
    } finally {
      await store.close();
    }
  });

  it('upgrading to pushed authorization requests (0011): existing clients need no PAR, and pushed_requests is STRICT', async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 11),
      t0,
    );
    db.prepare(
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
                VALUES ('web', 'Web', NULL, '["https://rp.example.com/cb"]', '["authorization_code"]', 1, 0, 0, ?)`,
    ).run(t0);
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 11));
      expect(await store.findClient('web')).toMatchObject({ clientId: 'web', requirePar: false });
      expect(store.db.prepare('SELECT strict FROM pragma_table_list WHERE name = ?').get('pushed_requests')).toEqual({ strict: 1 });
    } finally {
      await store.close();
    }
  });

  it('upgrading to profile claims (0013): users read no profile and their createdAt as updatedAt; codes and refresh tokens made before read no claims', async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 13),
      t0,
    );
    db.prepare(
      "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', 0, ?)",
    ).run(t0 - 500);
    db.prepare(
      `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at)
                VALUES ('cli', 'Command line', NULL, '[]', '["device_code"]', 1, 0, 0, ?)`,
    ).run(t0);
    db.prepare(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scope, audience, auth_time, created_at, expires_at)
                VALUES ('old-code', 'cli', 'user-alice', 'http://127.0.0.1/cb', 'openid', 'https://api.example.com', ?, ?, ?)`,
    ).run(t0, t0, t0 + 60);
    db.prepare(
      `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at)
                VALUES ('old-rt', 'old-rt', 'old-family', 'cli', 'user-alice', 'openid', 'https://api.example.com', ?, ?, ?, ?)`,
    ).run(t0, t0, t0 + 60, t0 + 60);
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 13));
      expect(await store.findUserById('user-alice')).toMatchObject({ profile: {}, createdAt: t0 - 500, updatedAt: t0 - 500 });
      expect((await store.findAuthorizationCode('old-code'))?.claims).toBeUndefined();
      expect((await store.findRefreshToken('old-rt'))?.claims).toBeUndefined();
      expect(store.db.prepare('SELECT strict FROM pragma_table_list WHERE name = ?').get('users')).toEqual({ strict: 1 });
      expect(await store.updateUser('alice', { profile: { nickname: 'Al' } }, t0)).toBe(true);
      expect(await store.findUserById('user-alice')).toMatchObject({ profile: { nickname: 'Al' }, updatedAt: t0 });
    } finally {
      await store.close();
    }
  });

  it('upgrading to factor enrolment links (0017): the one-time links already sent keep working, and the table stays STRICT', async () => {
    const path = tempDbPath();
    const db = new Database(path);
    migrate(
      db,
      readMigrations(sqliteMigrationsDir).filter((m) => m.version < 17),
      t0,
    );
    db.prepare(
      "INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('user-alice', 'alice', 'a@example.com', NULL, 'x', 0, ?)",
    ).run(t0);
    db.prepare(
      "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at, used_at) VALUES ('reset-1', 'user-alice', 'password_reset', 'a@example.com', ?, ?, NULL)",
    ).run(t0, t0 + 1800);
    db.prepare(
      "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at, used_at) VALUES ('verify-1', 'user-alice', 'email_verification', 'a@example.com', ?, ?, ?)",
    ).run(t0, t0 + 1800, t0 + 5);
    expect(() =>
      db
        .prepare(
          "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at) VALUES ('e', 'user-alice', 'factor_enrolment', 'a@example.com', 1, 2)",
        )
        .run(),
    ).toThrow(/CHECK/);
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames.filter((name) => Number(name.slice(0, 4)) >= 17));
      expect(await store.useEmailToken('reset-1', 'password_reset', t0 + 1)).toMatchObject({ userId: 'user-alice', usedAt: t0 + 1 });
      expect(await store.useEmailToken('verify-1', 'email_verification', t0 + 1)).toBeUndefined();
      await store.createEmailToken({
        tokenHash: 'enrol-1',
        userId: 'user-alice',
        purpose: 'factor_enrolment',
        email: 'a@example.com',
        createdAt: t0,
        expiresAt: t0 + 86400,
        usedAt: undefined,
      });
      expect(await store.useEmailToken('enrol-1', 'factor_enrolment', t0 + 1)).toMatchObject({ purpose: 'factor_enrolment' });
      expect(store.db.prepare('SELECT strict FROM pragma_table_list WHERE name = ?').get('email_tokens')).toEqual({ strict: 1 });
      expect(
        store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'email_tokens' AND name NOT LIKE 'sqlite_%' ORDER BY name").all(),
      ).toEqual([{ name: 'email_tokens_expires_at' }, { name: 'email_tokens_user' }]);
      expect(() =>
        store.db
          .prepare(
            "INSERT INTO email_tokens (token_hash, user_id, purpose, email, created_at, expires_at) VALUES ('x', 'user-alice', 'anything', 'a@example.com', 1, 2)",
          )
          .run(),
      ).toThrow(/CHECK/);
      // A user removed takes their links along (the foreign key survived the rebuild).
      store.db.prepare("DELETE FROM users WHERE id = 'user-alice'").run();
      expect(store.db.prepare('SELECT count(*) AS n FROM email_tokens').get()).toEqual({ n: 0 });
    } finally {
      await store.close();
    }
  });

  it('a profile or claims column edited by hand into something else reads as no profile / no claims, and keeps only the claims of the right type', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      await store.createUser(user());
      await store.createClient(client());
      await store.createAuthorizationCode(authorizationCode({ claims: { userinfo: ['email'], idToken: [] } }));
      await store.createRefreshToken(refreshToken({ claims: { userinfo: ['email'], idToken: [] } }));
      const setProfile = (json: string) => store.db.prepare("UPDATE users SET profile = ? WHERE id = 'user-alice'").run(json);
      const setClaims = (json: string) => {
        store.db.prepare("UPDATE authorization_codes SET claims = ? WHERE code_hash = 'code-hash-1'").run(json);
        store.db.prepare("UPDATE refresh_tokens SET claims = ? WHERE token_hash = 'refresh-hash-1'").run(json);
      };
      for (const broken of ['not json', '[]', '"text"', 'null', '42']) {
        setProfile(broken);
        expect((await store.findUserById('user-alice'))?.profile, broken).toStrictEqual({});
        expect((await store.listUsers())[0]?.profile, broken).toStrictEqual({});
        setClaims(broken);
        expect((await store.findAuthorizationCode('code-hash-1'))?.claims, broken).toBeUndefined();
        expect((await store.findRefreshToken('refresh-hash-1'))?.claims, broken).toBeUndefined();
      }
      setProfile(JSON.stringify({ nickname: 'Al', given_name: 7, phone_number_verified: 'yes', address: { locality: 'Oxford', country: 44 }, extra: 'x' }));
      expect((await store.findUserById('user-alice'))?.profile).toStrictEqual({ nickname: 'Al', address: { locality: 'Oxford' } });
      setProfile(JSON.stringify({ address: ['Oxford'], phone_number_verified: true }));
      expect((await store.findUserById('user-alice'))?.profile).toStrictEqual({ phone_number_verified: true });
      setClaims(JSON.stringify({ userinfo: ['email', 3], idToken: [] }));
      expect((await store.findAuthorizationCode('code-hash-1'))?.claims).toBeUndefined();
      setClaims(JSON.stringify({ userinfo: ['email'] }));
      expect((await store.findRefreshToken('refresh-hash-1'))?.claims).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it("a server's cached users, clients and APIs show roles, client changes and scopes made by another process at once, frozen", async () => {
    const path = tempDbPath();
    const server = new SqliteStore({ path, now: t0, groupCommit: true });
    const cli = new SqliteStore({ path, now: t0 });
    try {
      await server.createUser(user());
      await server.createClient(client({ jwks: { keys: [{ kty: 'EC', kid: 'k1' }] } }));
      await server.createApi(api());
      expect((await server.findUserById('user-alice'))?.roles).toEqual([]);
      expect((await server.findClient('cli'))?.disabled).toBe(false);
      expect((await server.findApi('https://api.example.com'))?.scopes).toEqual([]);

      await cli.createRole({ name: 'ops', description: undefined, permissions: [], createdAt: t0 });
      await cli.grantRole('user-alice', 'ops', t0);
      await cli.setClientDisabled('cli', true);
      await cli.updateApi(api({ scopes: ['read'] }));
      const alice = await server.findUserById('user-alice');
      expect(alice?.roles).toEqual(['ops']);
      expect((await server.findClient('cli'))?.disabled).toBe(true);
      expect((await server.findApi('https://api.example.com'))?.scopes).toEqual(['read']);

      // A role removed takes its grants along (a cascade): the cache hears of that too.
      await cli.removeRole('ops');
      expect((await server.findUserById('user-alice'))?.roles).toEqual([]);
      await cli.rotateClientSecret('cli', { hash: 'sha256-new', sealed: 'sealed-new' }, undefined);
      const found = await server.findClient('cli');
      expect(found?.secretHash).toBe('sha256-new');

      expect(Object.isFrozen(alice?.roles)).toBe(true);
      expect(Object.isFrozen(found?.jwks?.keys)).toBe(true);
      expect(Object.isFrozen(found?.jwks?.keys[0])).toBe(true);
    } finally {
      await cli.close();
      await server.close();
    }
  });

  it('a passkey whose transports column is not a JSON array of strings (edited by hand) reads as having none', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      await store.createUser(user());
      await store.createPasskey(passkey({ id: 'broken' }));
      await store.createPasskey(passkey({ id: 'object' }));
      await store.createPasskey(passkey({ id: 'mixed' }));
      store.db.prepare("UPDATE webauthn_credentials SET transports = 'usb,nfc' WHERE id = 'broken'").run();
      store.db.prepare("UPDATE webauthn_credentials SET transports = '{\"a\":1}' WHERE id = 'object'").run();
      store.db.prepare("UPDATE webauthn_credentials SET transports = '[\"usb\",3,null]' WHERE id = 'mixed'").run();
      expect((await store.findPasskey('broken'))?.transports).toEqual([]);
      expect((await store.findPasskey('object'))?.transports).toEqual([]);
      expect((await store.findPasskey('mixed'))?.transports).toEqual(['usb']);
    } finally {
      await store.close();
    }
  });

  it('close() twice is harmless', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    await store.close();
    await expect(store.close()).resolves.toBeUndefined();
  });
});

describe('SqliteStore gives space back', () => {
  it('a new file uses incremental vacuum, and purged rows shrink the file once reclaimed', async () => {
    const path = tempDbPath();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.db.pragma('auto_vacuum', { simple: true })).toBe(2);
      await store.createUser(user());
      const padding = 'x'.repeat(2000);
      store.bulk(() => {
        for (let i = 0; i < 5000; i++) void store.createSession(session({ idHash: `old-${i}-${padding}`, expiresAt: t0 - 1 }));
      });
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      const grown = statSync(path).size;
      expect(grown).toBeGreaterThan(10_000_000);
      await purgeAll(store, manualClock(t0), 500);
      const released = await reclaimAll(store);
      expect(released).toBeGreaterThan(2000);
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      expect(statSync(path).size).toBeLessThan(grown / 5);
      expect(await store.reclaimSpace()).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('an older file without it is converted once when opened', async () => {
    const path = tempDbPath();
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE leftover (x TEXT)');
    expect(old.pragma('auto_vacuum', { simple: true })).toBe(0);
    old.close();
    const cli = new SqliteStore({ path, now: t0 }); // a short admin command leaves it for the server
    expect(cli.vacuumConversion).toBe('postponed');
    expect(cli.db.pragma('auto_vacuum', { simple: true })).toBe(0);
    await cli.close();
    const store = new SqliteStore({ path, now: t0, convertToIncrementalVacuum: true });
    try {
      expect(store.vacuumConversion).toBe('converted');
      expect(store.db.pragma('auto_vacuum', { simple: true })).toBe(2);
    } finally {
      await store.close();
    }
  });
});

describe('SqliteStore file permissions', () => {
  it('creates the folder 0700 and the database, WAL and shared-memory files 0600 (they hold the signing keys)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-perm-'));
    tempDirs.push(dir);
    const path = join(dir, 'nested', 'latchkey.db');
    const store = new SqliteStore({ path, now: t0 });
    try {
      await store.createUser(user());
      expect(statSync(join(dir, 'nested')).mode & 0o777).toBe(0o700);
      for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(store.permissionWarnings).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('an existing database readable by others is reported (not changed), and its -wal/-shm are made 0600', async () => {
    const path = tempDbPath();
    const first = new SqliteStore({ path, now: t0 });
    await first.close();
    chmodSync(path, 0o644);
    const store = new SqliteStore({ path, now: t0 });
    try {
      await store.createUser(user());
      expect(statSync(path).mode & 0o777).toBe(0o644);
      for (const file of [`${path}-wal`, `${path}-shm`]) expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(store.permissionWarnings).toEqual([`the database file ${path} can be read by other users (mode 0644): run chmod 600 ${path}`]);
    } finally {
      await store.close();
    }
  });
});
