/**
 * Databases recorded in the numbering before the one history (SQLite and PostgreSQL numbered their
 * migrations each on its own) are upgraded in place with their data: the record is rewritten to
 * the one history's numbers and names before anything else, nothing is applied twice, nothing is
 * skipped, and the schema ends exactly as a database made from empty. Cases, on both stores: a
 * database the build before made (every file of its numbering, checksums recorded), one half-way
 * (an older build, some migrations not applied yet), the real databases older builds left
 * (test/fixtures/upgrade), two instances upgrading one at once, and the build before refusing the
 * result.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import pg from 'pg';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { postgresMigrationsDir, sqliteMigrationsDir } from '../../src/paths.js';
import { readMigrations } from '../../src/store/migration_files.js';
import { migrationChecksum } from '../../src/store/migration_history.js';
import { migrate as migrateSqlite } from '../../src/store/sqlite/migrate.js';
import { migrate as migratePostgres } from '../../src/store/postgres/migrate.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { PostgresStore } from '../../src/store/postgres/postgres_store.js';
import { latchkeyVersion } from '../../src/version.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';
import { t0 } from '../helpers/records.js';
import { postgresSchemaFacts, sqliteSchemaFacts } from '../helpers/schema.js';
import { applyAsOlderBuildPostgres, applyAsOlderBuildSqlite, numberingBefore, type OlderRecord } from '../helpers/older_builds.js';

const oneHistory = { sqlite: readMigrations(sqliteMigrationsDir), postgres: readMigrations(postgresMigrationsDir) };
const latest = oneHistory.sqlite.length;
const upgradeFixtures = fileURLToPath(new URL('../fixtures/upgrade/', import.meta.url));
/** The build before the one history recorded checksums and its version. */
const buildBefore: OlderRecord = { checksums: true, latchkeyVersion: '0.1.9' };
const beforeChecksums: OlderRecord = { checksums: false };
/** When the older build applied its migrations: kept through the rewrite. */
const appliedBefore = t0 - 86_400;

/** What the record should hold after the upgrade: every file of the one history, with its own checksum. */
function expectOneHistoryRecord(rows: { version: number; name: string; checksum: string }[], dialect: 'sqlite' | 'postgres'): void {
  expect(rows.map((r) => ({ version: r.version, name: r.name, checksum: r.checksum }))).toEqual(
    oneHistory[dialect].map((m) => ({ version: m.version, name: m.name, checksum: migrationChecksum(m.sql) })),
  );
}

/** The one history's names after `from`, as a migration run lists what it applied. */
const namesAfter = (dialect: 'sqlite' | 'postgres', from: number) => oneHistory[dialect].filter((m) => m.version > from).map((m) => m.name);

/** A person, inserted as the older build's schema has them (updated_at came with 0013_profile_claims). */
const aliceSql = (dialect: 'sqlite' | 'postgres', withUpdatedAt: boolean) =>
  `INSERT INTO users (id, username, email, name, password_hash, disabled, created_at${withUpdatedAt ? ', updated_at' : ''})
   VALUES ('user-alice', 'alice', 'alice@example.com', 'Alice', 'x', ${dialect === 'sqlite' ? '0' : 'false'}, ${t0}${withUpdatedAt ? `, ${t0}` : ''})`;

describe('renumbering on SQLite', () => {
  let dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    dirs = [];
  });
  function tempDb(): string {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-renumbering-'));
    dirs.push(dir);
    return join(dir, 'latchkey.db');
  }
  function freshFacts(): string[] {
    const db = new Database(':memory:');
    try {
      migrateSqlite(db, oneHistory.sqlite, t0);
      return sqliteSchemaFacts(db);
    } finally {
      db.close();
    }
  }
  const recordOf = (store: SqliteStore) =>
    store.db.prepare('SELECT version, name, applied_at, checksum, latchkey_version FROM schema_migrations ORDER BY version').all() as {
      version: number;
      name: string;
      applied_at: number;
      checksum: string;
      latchkey_version: string | null;
    }[];

  it('a database the build before made: its record takes the new numbers and names with the checksums and versions it had, only what is new is applied, and its data stays', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(db, numberingBefore.sqlite, buildBefore, appliedBefore);
    db.exec(aliceSql('sqlite', true));
    db.close();

    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.migrationRun).toEqual({ from: 18, to: latest, applied: namesAfter('sqlite', 18), renumbered: true });
      const rows = recordOf(store);
      expectOneHistoryRecord(rows, 'sqlite');
      // What the build before applied keeps its time, the nothing-to-do file included; a record the
      // rewrite changed names this build as its writer, one it left (0001–0013) the build before.
      expect(rows.filter((r) => r.version <= 18).every((r) => r.applied_at === appliedBefore)).toBe(true);
      expect(rows.filter((r) => r.version > 18).every((r) => r.applied_at === t0)).toBe(true);
      expect(rows.map((r) => r.latchkey_version)).toEqual(rows.map((r) => (r.version <= 13 ? '0.1.9' : latchkeyVersion)));
      expect(await store.findUserByUsername('ALICE')).toMatchObject({ id: 'user-alice', email: 'alice@example.com' });
      expect(sqliteSchemaFacts(store.db)).toEqual(freshFacts());
    } finally {
      await store.close();
    }
    // Opened again: nothing to rewrite, nothing to apply.
    const again = new SqliteStore({ path, now: t0 + 1 });
    try {
      expect(again.migrationRun).toEqual({ from: latest, to: latest, applied: [], renumbered: false });
    } finally {
      await again.close();
    }
  });

  it('a database half-way (the build before stopped after 0015_lost_answers): renumbered, then the rest applied in order', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(
      db,
      numberingBefore.sqlite.filter((m) => m.version <= 15),
      buildBefore,
      appliedBefore,
    );
    db.exec(aliceSql('sqlite', true));
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      // Its 0015_lost_answers is 0016 in the one history.
      expect(store.migrationRun).toEqual({ from: 16, to: latest, applied: namesAfter('sqlite', 16), renumbered: true });
      expectOneHistoryRecord(recordOf(store), 'sqlite');
      expect(await store.findUserByUsername('alice')).toMatchObject({ id: 'user-alice' });
      expect(sqliteSchemaFacts(store.db)).toEqual(freshFacts());
    } finally {
      await store.close();
    }
  });

  it('a database of an older build, from before checksums, that stopped where both numberings agree (0013): nothing to rewrite, the rest applied in order', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(
      db,
      numberingBefore.sqlite.filter((m) => m.version <= 13),
      beforeChecksums,
      appliedBefore,
    );
    db.close();
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(store.migrationRun).toEqual({ from: 13, to: latest, applied: namesAfter('sqlite', 13), renumbered: false });
      expectOneHistoryRecord(recordOf(store), 'sqlite');
      expect(sqliteSchemaFacts(store.db)).toEqual(freshFacts());
    } finally {
      await store.close();
    }
  });

  it.each([
    { fixture: 'd5e9618', from: 4 },
    { fixture: '49eb5a9', from: 13 },
  ])(
    'the database the main of $fixture left (its numbering agrees with the one history up to $from): upgraded with its data, the schema as from empty',
    async ({ fixture, from }) => {
      const path = tempDb();
      copyFileSync(join(upgradeFixtures, fixture, 'sqlite', 'latchkey.db'), path);
      const store = new SqliteStore({ path, now: t0 });
      try {
        expect(store.migrationRun).toEqual({ from, to: latest, applied: namesAfter('sqlite', from), renumbered: false });
        expectOneHistoryRecord(recordOf(store), 'sqlite');
        expect((await store.findUserByUsername('alice'))?.username).toBe('alice');
        expect(sqliteSchemaFacts(store.db)).toEqual(freshFacts());
      } finally {
        await store.close();
      }
    },
  );

  it('the build before refuses a renumbered database as upgraded by a newer Latchkey', async () => {
    const path = tempDb();
    const db = new Database(path);
    applyAsOlderBuildSqlite(db, numberingBefore.sqlite, buildBefore, appliedBefore);
    db.close();
    await new SqliteStore({ path, now: t0 }).close();
    // The runner, knowing only the files of the numbering before, as the build before does.
    const reopened = new Database(path);
    try {
      expect(() => migrateSqlite(reopened, numberingBefore.sqlite, t0, '0.1.9')).toThrow(
        new RegExp(
          `^the database was upgraded by Latchkey ${latchkeyVersion.replace(/\./g, '\\.')} \\(schema version ${latest}, ${oneHistory.sqlite.at(-1)!.name}\\); this is Latchkey 0\\.1\\.9, which knows schema versions up to 17`,
        ),
      );
    } finally {
      reopened.close();
    }
  });
});

describeWithPostgres('renumbering on PostgreSQL', () => {
  const url = pgTestUrl ?? '';
  const schemaPool = (schema: string) => new pg.Pool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
  const databases: string[] = [];
  afterAll(async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      for (const database of databases) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
    // Dropping whole databases waits on PostgreSQL's checkpoint: slow on a busy machine.
  }, 120_000);

  let fresh: string[] | undefined;
  async function freshFacts(): Promise<string[]> {
    if (fresh !== undefined) return fresh;
    const schema = freshSchema();
    const pool = schemaPool(schema);
    try {
      await migratePostgres(pool, oneHistory.postgres, t0, schema);
      fresh = await postgresSchemaFacts(pool, schema);
      return fresh;
    } finally {
      await pool.end();
    }
  }

  /** A schema as an older build left it. */
  async function olderSchema(migrations: typeof numberingBefore.postgres, record: OlderRecord, data?: string): Promise<string> {
    const schema = freshSchema();
    const pool = schemaPool(schema);
    try {
      await pool.query(`CREATE SCHEMA ${schema}`);
      await applyAsOlderBuildPostgres(pool, migrations, record, appliedBefore);
      if (data !== undefined) await pool.query(data);
    } finally {
      await pool.end();
    }
    return schema;
  }

  async function inspect(
    schema: string,
  ): Promise<{ rows: { version: number; name: string; applied_at: string; checksum: string; latchkey_version: string | null }[]; facts: string[] }> {
    const pool = schemaPool(schema);
    try {
      const { rows } = await pool.query('SELECT version, name, applied_at, checksum, latchkey_version FROM schema_migrations ORDER BY version');
      return { rows, facts: await postgresSchemaFacts(pool, schema) };
    } finally {
      await pool.end();
    }
  }

  it('a database the build before made: its 0001_init stands for 0001–0003, every record takes the new numbers with its checksum and version, only what is new is applied, and its data stays', async () => {
    const schema = await olderSchema(numberingBefore.postgres, buildBefore, aliceSql('postgres', true));
    const store = await PostgresStore.open({ url, schema, now: t0 });
    try {
      expect(store.migrationRun).toEqual({ from: 18, to: latest, applied: namesAfter('postgres', 18), renumbered: true });
      expect(await store.findUserByUsername('ALICE')).toMatchObject({ id: 'user-alice', email: 'alice@example.com' });
    } finally {
      await store.close();
    }
    const { rows, facts } = await inspect(schema);
    expectOneHistoryRecord(rows, 'postgres');
    expect(rows.filter((r) => r.version <= 18).every((r) => Number(r.applied_at) === appliedBefore)).toBe(true);
    // Only 0001_init kept its number and name.
    expect(rows.map((r) => r.latchkey_version)).toEqual(rows.map((r) => (r.version === 1 ? '0.1.9' : latchkeyVersion)));
    expect(facts).toEqual(await freshFacts());
    const again = await PostgresStore.open({ url, schema, now: t0 + 1 });
    try {
      expect(again.migrationRun).toEqual({ from: latest, to: latest, applied: [], renumbered: false });
    } finally {
      await again.close();
    }
  });

  it('a database half-way (an older build, from before checksums, stopped after 0006_accounts): renumbered, then the rest applied in order', async () => {
    const schema = await olderSchema(
      numberingBefore.postgres.filter((m) => m.version <= 6),
      beforeChecksums,
      aliceSql('postgres', false),
    );
    const store = await PostgresStore.open({ url, schema, now: t0 });
    try {
      // Its 0006_accounts is 0008 in the one history.
      expect(store.migrationRun).toEqual({ from: 8, to: latest, applied: namesAfter('postgres', 8), renumbered: true });
      // 0013_profile_claims ran after the renumbering: the user made before it last changed when made.
      expect(await store.findUserByUsername('alice')).toMatchObject({ id: 'user-alice', updatedAt: t0 });
    } finally {
      await store.close();
    }
    const { rows, facts } = await inspect(schema);
    expectOneHistoryRecord(rows, 'postgres');
    expect(facts).toEqual(await freshFacts());
  });

  it('a database that stopped after 0001_init, where both numberings agree: nothing to rewrite, and 0002–0003 (nothing to do here) and the rest applied in order', async () => {
    const schema = await olderSchema(
      numberingBefore.postgres.filter((m) => m.version === 1),
      buildBefore,
    );
    const store = await PostgresStore.open({ url, schema, now: t0 });
    try {
      expect(store.migrationRun).toEqual({ from: 1, to: latest, applied: namesAfter('postgres', 1), renumbered: false });
    } finally {
      await store.close();
    }
    const { rows, facts } = await inspect(schema);
    expectOneHistoryRecord(rows, 'postgres');
    expect(facts).toEqual(await freshFacts());
  });

  it('two instances upgrading one database the build before made, at once: the record is rewritten once and each new file applied once', async () => {
    const schema = await olderSchema(numberingBefore.postgres, buildBefore);
    const stores = await Promise.all([PostgresStore.open({ url, schema, now: t0 }), PostgresStore.open({ url, schema, now: t0 })]);
    try {
      expect(stores.map((s) => s.migrationRun).sort((a, b) => b.applied.length - a.applied.length)).toEqual([
        { from: 18, to: latest, applied: namesAfter('postgres', 18), renumbered: true },
        { from: latest, to: latest, applied: [], renumbered: false },
      ]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    expectOneHistoryRecord((await inspect(schema)).rows, 'postgres');
  });

  it.each([
    { fixture: 'd5e9618', from: 4 },
    { fixture: '49eb5a9', from: 14 },
  ])(
    'the database the main of $fixture left (renumbered: its last file is $from in the one history): upgraded with its data, the schema as from empty',
    async ({ fixture, from }) => {
      const database = `latchkey_renumbering_${fixture}_${randomBytes(4).toString('hex')}`;
      databases.push(database);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${database}`);
      } finally {
        await admin.end();
      }
      const databaseUrl = new URL(url);
      databaseUrl.pathname = `/${database}`;
      const client = new pg.Client({ connectionString: databaseUrl.toString() });
      await client.connect();
      try {
        await client.query(readFileSync(join(upgradeFixtures, fixture, 'postgres', 'dump.sql'), 'utf8'));
      } finally {
        await client.end();
      }
      const store = await PostgresStore.open({ url: databaseUrl.toString(), now: t0 });
      try {
        expect(store.migrationRun).toEqual({ from, to: latest, applied: namesAfter('postgres', from), renumbered: true });
        expect((await store.findUserByUsername('alice'))?.username).toBe('alice');
      } finally {
        await store.close();
      }
      const pool = new pg.Pool({ connectionString: databaseUrl.toString(), max: 1 });
      try {
        expectOneHistoryRecord((await pool.query('SELECT version, name, checksum FROM public.schema_migrations ORDER BY version')).rows, 'postgres');
        expect(await postgresSchemaFacts(pool, 'public')).toEqual(await freshFacts());
      } finally {
        await pool.end();
      }
    },
  );

  it('the build before refuses a renumbered database as upgraded by a newer Latchkey', async () => {
    const schema = await olderSchema(numberingBefore.postgres, buildBefore);
    await (await PostgresStore.open({ url, schema, now: t0 })).close();
    const pool = schemaPool(schema);
    try {
      await expect(migratePostgres(pool, numberingBefore.postgres, t0, schema, '0.1.9')).rejects.toThrow(
        new RegExp(
          `^the database was upgraded by Latchkey ${latchkeyVersion.replace(/\./g, '\\.')} \\(schema version ${latest}, ${oneHistory.postgres.at(-1)!.name}\\); this is Latchkey 0\\.1\\.9, which knows schema versions up to 16`,
        ),
      );
    } finally {
      await pool.end();
    }
  });
});
