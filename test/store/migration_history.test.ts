/**
 * What a database's record of applied migrations must agree with, on both stores: each applied
 * migration's checksum and the Latchkey version that applied it are recorded; a database that a
 * newer build upgraded is refused with one line naming that build; a migration edited after a
 * database applied it is refused; and a database that ran the intermediate texts of 0005, 0006
 * and 0008 (as released at 055d3d9, 4a595d1 and 03029f9, in the numbering before the one history:
 * PostgreSQL's 0003, 0004, 0006) is brought level by the migration that repeats what they gained
 * later (0015_level_intermediate_builds).
 */
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresMigrationsDir, sqliteMigrationsDir } from '../../src/paths.js';
import { readMigrations } from '../../src/store/migration_files.js';
import { migrationChecksum } from '../../src/store/migration_history.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { latchkeyVersion } from '../../src/version.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';
import { t0 } from '../helpers/records.js';
import {
  applyAsOlderBuildPostgres,
  applyAsOlderBuildSqlite as applyAsOlderBuild,
  asIntermediateBuildsRanThem,
  numberingBefore,
  type OlderRecord,
} from '../helpers/older_builds.js';

/** How builds before checksums recorded what they applied. */
const beforeChecksums: OlderRecord = { checksums: false };

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-history-'));
  dirs.push(dir);
  return join(dir, 'latchkey.db');
}

/** Applies migrations of the numbering before as builds before checksums did: no checksum, no version. */
function applyAsOlderBuildSqlite(db: Database.Database, migrations: typeof numberingBefore.sqlite): void {
  applyAsOlderBuild(db, migrations, beforeChecksums, t0);
}

describe('the migration history on SQLite', () => {
  it('records each migration with its checksum and the Latchkey version that applied it', async () => {
    const path = tempDb();
    const store = new SqliteStore({ path, now: t0 });
    try {
      const rows = store.db.prepare('SELECT name, checksum, latchkey_version FROM schema_migrations ORDER BY version').all() as {
        name: string;
        checksum: string;
        latchkey_version: string;
      }[];
      expect(rows.map((r) => r.name)).toEqual(readMigrations(sqliteMigrationsDir).map((m) => m.name));
      for (const row of rows) {
        expect(row.checksum).toBe(migrationChecksum(readFileSync(join(sqliteMigrationsDir, row.name), 'utf8')));
        expect(row.latchkey_version).toBe(latchkeyVersion);
      }
      expect(store.migrationRun).toMatchObject({ from: 0, to: Math.max(...readMigrations(sqliteMigrationsDir).map((m) => m.version)) });
    } finally {
      await store.close();
    }
  });

  it('a database an older build made gets the checksums of the files it ran, and its missing migrations, with from → to for the start log', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(
      db,
      numberingBefore.sqlite.filter((m) => m.version <= 13),
    );
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.migrationRun.from).toBe(13);
      expect(store.migrationRun.applied.slice(0, 2)).toEqual(['0014_directory_notify.sql', '0015_level_intermediate_builds.sql']);
      const unrecorded = store.db.prepare('SELECT count(*) AS n FROM schema_migrations WHERE checksum IS NULL').get() as { n: number };
      expect(unrecorded.n).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('a database a newer build upgraded is refused with one line naming that build, and left as it is', async () => {
    const path = tempDb();
    await new SqliteStore({ path, now: t0 }).close();
    const db = new Database(path);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (999, '0999_later.sql', ?, 'x', '9.9.9')").run(t0);
    db.close();
    let message = '';
    try {
      new SqliteStore({ path, now: t0 });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      `the database was upgraded by Latchkey 9.9.9 (schema version 999, 0999_later.sql); this is Latchkey ${latchkeyVersion}, which knows schema versions up to ${Math.max(...readMigrations(sqliteMigrationsDir).map((m) => m.version))}: run Latchkey 9.9.9 or newer, or restore the backup made before the upgrade`,
    );
    expect(message).not.toContain('\n');
  });

  it('a migration edited after the database applied it is refused, naming the file', async () => {
    const path = tempDb();
    await new SqliteStore({ path, now: t0 }).close();
    const db = new Database(path);
    db.prepare("UPDATE schema_migrations SET checksum = 'ffffffffffffffff' WHERE name = '0006_connectors.sql'").run();
    db.close();
    expect(() => new SqliteStore({ path, now: t0 })).toThrow(
      /^migration 0006_connectors\.sql differs from the one this database applied .*a released migration must never be edited/,
    );
  });

  it('a database that ran the intermediate builds of 0005, 0006 and 0008 is brought level by 0015', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(
      db,
      numberingBefore.sqlite.filter((m) => m.version <= 4),
    );
    // Before 0005: a family rotated once (replaced_by known), and one that also handed out a grace
    // successor, which no parent column could record.
    db.exec(`INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('u-admin', 'admin', 'admin@localhost', NULL, 'x', 0, ${t0});
      INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at) VALUES ('cli', 'CLI', NULL, '[]', '["refresh_token"]', 1, 1, 0, ${t0});`);
    const token = (id: string, family: string, rotated: string | null, grace = 0) =>
      db
        .prepare(
          `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at, rotated_at, replaced_by, grace_successors)
           VALUES (?, ?, ?, 'cli', 'u-admin', 'openid offline_access', 'aud', ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, `h-${id}`, family, t0, t0, t0 + 9e6, t0 + 9e6, rotated === null ? null : t0 + 1, rotated, grace);
    token('a0', 'plain', 'a1');
    token('a1', 'plain', null);
    token('b0', 'forked', 'b1', 1);
    token('b1', 'forked', null);
    token('b2', 'forked', null); // the grace successor: no parent anywhere
    applyAsOlderBuildSqlite(
      db,
      asIntermediateBuildsRanThem('sqlite', 13).filter((m) => m.version > 4),
    );
    // What the intermediate builds left: parents never filled in, the forked family live, the made-up
    // address verified, no index on the session of refresh tokens.
    expect(db.prepare("SELECT parent_id FROM refresh_tokens WHERE id = 'a1'").get()).toEqual({ parent_id: null });
    expect(db.prepare("SELECT email_verified FROM users WHERE id = 'u-admin'").get()).toEqual({ email_verified: 1 });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'refresh_tokens_session'").get()).toBeUndefined();
    db.close();

    const store = new SqliteStore({ path, now: t0 + 100 });
    try {
      expect(store.migrationRun.applied.slice(0, 2)).toEqual(['0014_directory_notify.sql', '0015_level_intermediate_builds.sql']);
      expect((await store.findRefreshToken('h-a1'))?.parentId).toBe('a0');
      expect((await store.findRefreshToken('h-a1'))?.revokedAt).toBeUndefined();
      expect(await store.isRefreshFamilyRevoked('plain')).toBe(false);
      expect(await store.isRefreshFamilyRevoked('forked')).toBe(true);
      for (const id of ['h-b0', 'h-b1', 'h-b2']) expect((await store.findRefreshToken(id))?.revokedAt).toBeDefined();
      expect((await store.findUserById('u-admin'))?.emailVerified).toBe(false);
      expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'refresh_tokens_session'").get()).toEqual({ name: 'refresh_tokens_session' });
    } finally {
      await store.close();
    }
  });

  it('on a database that ran the final texts, 0015 changes no row', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(
      db,
      numberingBefore.sqlite.filter((m) => m.version <= 13),
    );
    db.exec(`INSERT INTO users (id, username, email, name, password_hash, disabled, created_at, email_verified) VALUES ('u', 'bob', 'bob@example.com', NULL, 'x', 0, ${t0}, 1);
      INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at) VALUES ('cli', 'CLI', NULL, '[]', '["refresh_token"]', 1, 1, 0, ${t0});`);
    const insert = db.prepare(
      `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at, rotated_at, replaced_by, grace_successors, parent_id)
       VALUES (?, ?, 'f', 'cli', 'u', 's', 'a', ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    insert.run('r0', 'h0', t0, t0, t0 + 9e6, t0 + 9e6, t0 + 1, 'r1', 1, null);
    insert.run('r1', 'h1', t0, t0, t0 + 9e6, t0 + 9e6, null, null, 0, 'r0');
    insert.run('r2', 'h2', t0, t0, t0 + 9e6, t0 + 9e6, null, null, 0, 'r0'); // a grace successor, parent recorded
    const columns = 'SELECT id, family_id, rotated_at, replaced_by, grace_successors, revoked_at, parent_id, superseded_at FROM refresh_tokens ORDER BY id';
    const before = db.prepare(columns).all();
    db.close();
    const store = new SqliteStore({ path, now: t0 + 100 });
    try {
      expect(store.db.prepare(columns).all()).toEqual(before);
      expect(await store.isRefreshFamilyRevoked('f')).toBe(false);
      expect((await store.findUserById('u'))?.emailVerified).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describeWithPostgres('the migration history on PostgreSQL', () => {
  const url = pgTestUrl ?? '';
  const schemaPool = (schema: string) => new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });

  /** Applies migrations of the numbering before as builds before checksums did; `between` runs before the file numbered `split`. */
  async function applyAsOlderBuild(
    schema: string,
    migrations: typeof numberingBefore.postgres,
    between: (pool: pg.Pool) => Promise<void>,
    split: number,
  ): Promise<void> {
    const pool = schemaPool(schema);
    try {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      await applyAsOlderBuildPostgres(pool, migrations, beforeChecksums, t0, { before: split, run: between });
    } finally {
      await pool.end();
    }
  }

  it('records checksums and versions, and refuses a newer or an edited history with one line', async () => {
    const schema = freshSchema();
    await (await PostgresStore.open({ url, schema, now: t0 })).close();
    const pool = schemaPool(schema);
    try {
      const rows = (await pool.query('SELECT name, checksum, latchkey_version FROM schema_migrations ORDER BY version')).rows as {
        name: string;
        checksum: string;
        latchkey_version: string;
      }[];
      expect(rows.map((r) => r.name)).toEqual(readMigrations(postgresMigrationsDir).map((m) => m.name));
      for (const row of rows) {
        expect(row.checksum).toBe(migrationChecksum(readFileSync(join(postgresMigrationsDir, row.name), 'utf8')));
        expect(row.latchkey_version).toBe(latchkeyVersion);
      }
      await pool.query("INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (999, '0999_later.sql', 1, 'x', '9.9.9')");
      await expect(PostgresStore.open({ url, schema, now: t0 })).rejects.toThrow(
        /^the database was upgraded by Latchkey 9\.9\.9 \(schema version 999, 0999_later\.sql\); this is Latchkey /,
      );
      await pool.query('DELETE FROM schema_migrations WHERE version = 999');
      await pool.query("UPDATE schema_migrations SET checksum = 'ffff' WHERE name = '0006_connectors.sql'");
      await expect(PostgresStore.open({ url, schema, now: t0 })).rejects.toThrow(/^migration 0006_connectors\.sql differs from the one this database applied/);
    } finally {
      await pool.end();
    }
  });

  it('a database that ran the intermediate builds of 0003, 0004 and 0006 (numbered as they were) is brought level by 0015', async () => {
    const schema = freshSchema();
    const insertData = async (pool: pg.Pool) => {
      await pool.query(
        `INSERT INTO users (id, username, email, name, password_hash, disabled, created_at) VALUES ('u-admin', 'admin', 'admin@localhost', NULL, 'x', false, ${t0})`,
      );
      await pool.query(
        `INSERT INTO clients (client_id, name, secret_hash, redirect_uris, grant_types, require_pkce, first_party, built_in, created_at) VALUES ('cli', 'CLI', NULL, '[]', '["refresh_token"]', true, true, false, ${t0})`,
      );
      const token = (id: string, family: string, rotated: string | null, grace = 0) =>
        pool.query(
          `INSERT INTO refresh_tokens (id, token_hash, family_id, client_id, user_id, scope, audience, auth_time, created_at, expires_at, family_expires_at, rotated_at, replaced_by, grace_successors)
           VALUES ($1, $2, $3, 'cli', 'u-admin', 's', 'aud', ${t0}, ${t0}, ${t0 + 9e6}, ${t0 + 9e6}, $4, $5, $6)`,
          [id, `h-${id}`, family, rotated === null ? null : t0 + 1, rotated, grace],
        );
      await token('a0', 'plain', 'a1');
      await token('a1', 'plain', null);
      await token('b0', 'forked', 'b1', 1);
      await token('b1', 'forked', null);
      await token('b2', 'forked', null);
    };
    // The data goes in before 0003 (hardening, as numbered then), as it would have on a build older than parents.
    await applyAsOlderBuild(schema, asIntermediateBuildsRanThem('postgres', 12), insertData, 3);
    const store = await PostgresStore.open({ url, schema, now: t0 + 100 });
    try {
      // Its 0012_directory_notify is 0014 in the one history.
      expect(store.migrationRun).toMatchObject({ from: 14, renumbered: true });
      expect(store.migrationRun.applied[0]).toBe('0015_level_intermediate_builds.sql');
      expect((await store.findRefreshToken('h-a1'))?.parentId).toBe('a0');
      expect(await store.isRefreshFamilyRevoked('plain')).toBe(false);
      expect(await store.isRefreshFamilyRevoked('forked')).toBe(true);
      for (const id of ['h-b0', 'h-b1', 'h-b2']) expect((await store.findRefreshToken(id))?.revokedAt).toBeDefined();
      expect((await store.findUserById('u-admin'))?.emailVerified).toBe(false);
    } finally {
      await store.close();
    }
    const pool = schemaPool(schema);
    try {
      expect((await pool.query("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexname = 'refresh_tokens_session'", [schema])).rowCount).toBe(1);
      expect((await pool.query('SELECT count(*)::int AS n FROM schema_migrations WHERE checksum IS NULL')).rows[0].n).toBe(0);
    } finally {
      await pool.end();
    }
  });
});
