/**
 * One migration history, two dialects, one schema: SQLite and PostgreSQL are each migrated from
 * empty by their runner and compared fact by fact — tables, columns with their types as mapped
 * between the dialects, nullability, defaults, primary keys, unique constraints, indexes (names,
 * columns, predicates), foreign keys, CHECK lists and which tables have triggers (see
 * test/helpers/schema.ts for the mapping). Where the two differ by design, the difference is
 * listed below with its reason; any other difference is a bug, fixed by a new migration in both
 * histories.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import pg from 'pg';
import { postgresMigrationsDir, sqliteMigrationsDir } from '../../src/paths.js';
import { readMigrations, type Migration } from '../../src/store/migration_files.js';
import { migrate as migrateSqlite } from '../../src/store/sqlite/migrate.js';
import { migrate as migratePostgres } from '../../src/store/postgres/migrate.js';
import { describeWithPostgres, freshSchema, pgTestUrl } from '../helpers/postgres.js';
import { postgresSchemaFacts, sqliteSchemaFacts } from '../helpers/schema.js';
import { t0 } from '../helpers/records.js';

const intendedDifferences: { why: string; sqlite: string[]; postgres: string[] }[] = [
  {
    why:
      'Usernames are unique regardless of the case of ASCII letters. SQLite has a collation for it (NOCASE) on the column and its UNIQUE constraint; ' +
      'PostgreSQL has none, so a unique index on lower(username COLLATE "C") does it, and the store compares usernames through the same expression.',
    sqlite: ['column users.username text collate nocase not null', 'unique users (username collate nocase)'],
    postgres: ['column users.username text not null', 'unique index users_username_nocase on users (lower(username))'],
  },
  {
    why: "Email lookups ignore case: SQLite's queries compare with COLLATE NOCASE, PostgreSQL's with lower(); each dialect's index is on what its queries compare.",
    sqlite: ['index users_email on users (email collate nocase)'],
    postgres: ['index users_email on users (lower(email))'],
  },
  {
    why:
      'The servers drop their directory cache when clients, users, roles, APIs or connectors change. SQLite processes notice it in a counter that triggers bump ' +
      '(0003_directory_version); PostgreSQL instances are told by NOTIFY from triggers on the same tables (0014_directory_notify), so PostgreSQL keeps no counter.',
    sqlite: [
      'table directory_version',
      'column directory_version.id integer not null',
      'column directory_version.version integer not null',
      'primary key directory_version (id)',
      'check directory_version id = 1',
    ],
    postgres: [],
  },
  {
    why: "A session's public id is 32 random hex digits, made by each dialect's own functions (SQLite has no UUIDs, PostgreSQL no randomblob).",
    sqlite: ['column sessions.public_id text not null default lower(hex(randomblob(16)))'],
    postgres: ["column sessions.public_id text not null default replace((gen_random_uuid()), '-', '')"],
  },
  {
    why:
      'SQLite cannot add a NOT NULL column without a default, so 0013_profile_claims gave users.updated_at the default 0 there and then set it; ' +
      'PostgreSQL sets it and then makes it NOT NULL. Every insert of a user writes updated_at.',
    sqlite: ['column users.updated_at integer not null default 0'],
    postgres: ['column users.updated_at integer not null'],
  },
  {
    why:
      "The runners' own record (not a migration's): a migration number has four digits, and PostgreSQL's runner has made the column INTEGER since before " +
      'the two histories were one; the builds before read it as it is.',
    sqlite: ['column schema_migrations.version integer not null'],
    postgres: ['column schema_migrations.version int32 not null'],
  },
];

describeWithPostgres('one migration history, two dialects', () => {
  const sqliteMigrations = readMigrations(sqliteMigrationsDir);
  const postgresMigrations = readMigrations(postgresMigrationsDir);
  let pool: pg.Pool;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: pgTestUrl, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
  });

  /** The facts of each dialect that the other lacks, after migrating both from empty with the files given. */
  async function differences(sqlite: Migration[], postgres: Migration[]): Promise<{ sqlite: string[]; postgres: string[] }> {
    const db = new Database(':memory:');
    let sqliteFacts: string[];
    try {
      migrateSqlite(db, sqlite, t0);
      sqliteFacts = sqliteSchemaFacts(db);
    } finally {
      db.close();
    }
    const schema = freshSchema();
    const schemaPool = new pg.Pool({ connectionString: pgTestUrl, max: 1, options: `-c search_path=${schema}` });
    try {
      await migratePostgres(schemaPool, postgres, t0, schema);
    } finally {
      await schemaPool.end();
    }
    const postgresFacts = await postgresSchemaFacts(pool, schema);
    return {
      sqlite: sqliteFacts.filter((f) => !postgresFacts.includes(f)),
      postgres: postgresFacts.filter((f) => !sqliteFacts.includes(f)),
    };
  }

  it('migrated from empty, SQLite and PostgreSQL have the same schema but for the differences listed with their reasons', async () => {
    const found = await differences(sqliteMigrations, postgresMigrations);
    expect(found).toEqual({
      sqlite: intendedDifferences.flatMap((d) => d.sqlite).sort(),
      postgres: intendedDifferences.flatMap((d) => d.postgres).sort(),
    });
  });

  it('the comparison sees what 0019_schema_parity made the same: the indexes of client_id, the name of the sessions index, a 32-bit rate-limit count', async () => {
    const before = (migrations: Migration[]) => migrations.filter((m) => m.name !== '0019_schema_parity.sql');
    const found = await differences(before(sqliteMigrations), before(postgresMigrations));
    const listed = { sqlite: intendedDifferences.flatMap((d) => d.sqlite), postgres: intendedDifferences.flatMap((d) => d.postgres) };
    expect({ sqlite: found.sqlite.filter((f) => !listed.sqlite.includes(f)), postgres: found.postgres.filter((f) => !listed.postgres.includes(f)) }).toEqual({
      sqlite: ['column rate_limit_counters.count integer not null', 'index sessions_user on sessions (user_id)'],
      postgres: [
        'column rate_limit_counters.count int32 not null',
        'index authorization_codes_client_id on authorization_codes (client_id)',
        'index device_grants_client_id on device_grants (client_id)',
        'index refresh_tokens_client_id on refresh_tokens (client_id)',
        'index sessions_user_id on sessions (user_id)',
      ],
    });
  });
});
