/**
 * Applies the numbered SQL files of migrations/postgres/ in order, each in its own transaction and
 * recorded in schema_migrations (with its checksum and the Latchkey version that applied it), so
 * an interrupted upgrade leaves the database at the last complete version. The whole run holds a
 * session advisory lock on one connection: instances starting at once take turns, and the later
 * ones find every file recorded and apply nothing. Before anything is applied, a record kept in the
 * numbering before the one history is rewritten to it (migration_renumbering.ts), and the record
 * is checked (migration_history.ts): a database upgraded by a newer build, or one whose migrations
 * were edited since it ran them, is refused.
 */
import type { Pool, PoolClient } from 'pg';
import type { Migration } from '../migration_files.js';
import { checkMigrationHistory, migrationChecksum, schemaVersion, type MigrationRun } from '../migration_history.js';
import { renumberedRecords, type MigrationRecord } from '../migration_renumbering.js';
import { latchkeyVersion } from '../../version.js';

/**
 * The pg_advisory_lock key of a migration run: "LATCHKEY" as a 64-bit number. Fixed for good, since
 * instances of different versions must agree on it. It is per database, so runs in different
 * schemas of one database also take turns (harmless: they are short).
 */
export const migrationLockKey = '5494765668321150297';

/** A schema name used as is in SQL and in search_path, so it is limited to what needs no quoting. */
export const schemaNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;

async function appliedMigrations(client: PoolClient): Promise<MigrationRecord[]> {
  const { rows } = await client.query<{ version: number; name: string; applied_at: string; checksum: string | null; latchkey_version: string | null }>(
    'SELECT version, name, applied_at, checksum, latchkey_version FROM schema_migrations ORDER BY version',
  );
  return rows.map((row) => ({
    version: row.version,
    name: row.name,
    appliedAt: Number(row.applied_at),
    checksum: row.checksum ?? undefined,
    latchkeyVersion: row.latchkey_version ?? undefined,
  }));
}

/** Rewrites a record kept in the numbering before the one history, in one transaction; true when there was one. */
async function renumber(client: PoolClient, version: string): Promise<boolean> {
  await client.query('BEGIN');
  try {
    const records = renumberedRecords('postgres', await appliedMigrations(client), version);
    if (records !== undefined) {
      await client.query('DELETE FROM schema_migrations');
      for (const r of records) {
        await client.query('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES ($1, $2, $3, $4, $5)', [
          r.version,
          r.name,
          r.appliedAt,
          r.checksum ?? null,
          r.latchkeyVersion ?? null,
        ]);
      }
    }
    await client.query('COMMIT');
    return records !== undefined;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * Creates `schema` when given and missing (the pool's search_path must already name it), then
 * applies what is not applied yet.
 */
export async function migrate(pool: Pool, migrations: Migration[], now: number, schema?: string, version = latchkeyVersion): Promise<MigrationRun> {
  if (schema !== undefined && !schemaNamePattern.test(schema)) throw new Error(`invalid schema name "${schema}"`);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [migrationLockKey]);
    // Under the lock: two CREATE SCHEMA IF NOT EXISTS at the same moment can still collide.
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at BIGINT NOT NULL
    )`);
    // The record's own columns, added in place to the table older builds made.
    await client.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum TEXT, ADD COLUMN IF NOT EXISTS latchkey_version TEXT');
    // Before anything else: the record in the numbers of the one history.
    const renumbered = await renumber(client, version);

    const history = await appliedMigrations(client);
    const from = schemaVersion(history);
    for (const record of checkMigrationHistory(history, migrations, version)) {
      await client.query('UPDATE schema_migrations SET checksum = $1 WHERE version = $2 AND checksum IS NULL', [record.checksum, record.version]);
    }

    const applied: string[] = [];
    for (const migration of migrations) {
      await client.query('BEGIN');
      try {
        const done = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [migration.version]);
        if (done.rowCount === 0) {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES ($1, $2, $3, $4, $5)', [
            migration.version,
            migration.name,
            now,
            migrationChecksum(migration.sql),
            version,
          ]);
          applied.push(migration.name);
        }
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }
    await client.query('SELECT pg_advisory_unlock($1)', [migrationLockKey]);
    return { from, to: Math.max(from, schemaVersion(migrations)), applied, renumbered };
  } finally {
    // The connection is closed rather than returned to the pool: ending the session also ends the
    // lock when a failure left it held, and no half-finished transaction can reach another caller.
    client.release(true);
  }
}
