/**
 * Databases as older builds left them, made in the test: migrations applied and recorded the way
 * those builds' runners did, in the numbering they used. test/fixtures/migrations/numbering_before/
 * holds the migration files as the builds before the one history shipped them (SQLite 0001–0017,
 * PostgreSQL 0001–0016, byte for byte), and intermediate/ the texts a few intermediate builds ran.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { readMigrations, type Migration } from '../../src/store/migration_files.js';
import { migrationChecksum } from '../../src/store/migration_history.js';

const fixtures = fileURLToPath(new URL('../fixtures/migrations/', import.meta.url));

/** The migration files of the builds before the one history, in their own numbering. */
export const numberingBefore = {
  sqlite: readMigrations(join(fixtures, 'numbering_before', 'sqlite')),
  postgres: readMigrations(join(fixtures, 'numbering_before', 'postgres')),
};

/** The migrations of the numbering before as the intermediate builds ran them, up to `through`. */
export function asIntermediateBuildsRanThem(dialect: 'sqlite' | 'postgres', through: number): Migration[] {
  const dir = join(fixtures, 'intermediate', ...(dialect === 'postgres' ? ['postgres'] : []));
  return numberingBefore[dialect]
    .filter((m) => m.version <= through)
    .map((m) => {
      try {
        return { ...m, sql: readFileSync(join(dir, m.name), 'utf8') };
      } catch {
        return m;
      }
    });
}

/**
 * How a build recorded what it applied: builds before checksums kept version, name and time only;
 * later ones also the checksum and their own version.
 */
export type OlderRecord = { checksums: false } | { checksums: true; latchkeyVersion: string };

export function applyAsOlderBuildSqlite(db: Database.Database, migrations: Migration[], record: OlderRecord, appliedAt: number): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT');
  if (
    record.checksums &&
    (db.prepare("SELECT count(*) AS n FROM pragma_table_info('schema_migrations') WHERE name = 'checksum'").get() as { n: number }).n === 0
  ) {
    db.exec('ALTER TABLE schema_migrations ADD COLUMN checksum TEXT; ALTER TABLE schema_migrations ADD COLUMN latchkey_version TEXT');
  }
  for (const m of migrations) {
    db.transaction(() => {
      db.exec(m.sql);
      if (record.checksums) {
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (?, ?, ?, ?, ?)').run(
          m.version,
          m.name,
          appliedAt,
          migrationChecksum(m.sql),
          record.latchkeyVersion,
        );
      } else {
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, appliedAt);
      }
    })();
  }
}

/** The same on PostgreSQL, in the schema the pool's search_path names; `between` runs before the file numbered `split`. */
export async function applyAsOlderBuildPostgres(
  pool: pg.Pool,
  migrations: Migration[],
  record: OlderRecord,
  appliedAt: number,
  between?: { before: number; run: (pool: pg.Pool) => Promise<void> },
): Promise<void> {
  await pool.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
  if (record.checksums)
    await pool.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum TEXT, ADD COLUMN IF NOT EXISTS latchkey_version TEXT');
  for (const m of migrations) {
    if (between !== undefined && m.version === between.before) await between.run(pool);
    await pool.query(m.sql);
    if (record.checksums) {
      await pool.query('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES ($1, $2, $3, $4, $5)', [
        m.version,
        m.name,
        appliedAt,
        migrationChecksum(m.sql),
        record.latchkeyVersion,
      ]);
    } else {
      await pool.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, appliedAt]);
    }
  }
}
