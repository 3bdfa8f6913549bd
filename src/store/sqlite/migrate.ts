/**
 * Applies the numbered SQL files of migrations/sqlite/ in order, each in its own IMMEDIATE transaction
 * and recorded in schema_migrations (with its checksum and the Latchkey version that applied it),
 * so an interrupted upgrade leaves the database at the last complete version and two processes
 * starting at once never apply a file twice. Before anything is applied, a record kept in the
 * numbering before the one history is rewritten to it (migration_renumbering.ts), and the record
 * is checked (migration_history.ts): a database upgraded by a newer build, or one whose migrations
 * were edited since it ran them, is refused.
 */
import type Database from 'better-sqlite3';
import type { Migration } from '../migration_files.js';
import { checkMigrationHistory, migrationChecksum, MigrationHistoryError, schemaVersion, type MigrationRun } from '../migration_history.js';
import { renumberedRecords, type MigrationRecord } from '../migration_renumbering.js';
import { latchkeyVersion } from '../../version.js';

export { readMigrations, type Migration } from '../migration_files.js';

function appliedMigrations(db: Database.Database): MigrationRecord[] {
  return (
    db.prepare('SELECT version, name, applied_at, checksum, latchkey_version FROM schema_migrations ORDER BY version').all() as Record<string, unknown>[]
  ).map((row) => ({
    version: Number(row.version),
    name: String(row.name),
    appliedAt: Number(row.applied_at),
    checksum: typeof row.checksum === 'string' ? row.checksum : undefined,
    latchkeyVersion: typeof row.latchkey_version === 'string' ? row.latchkey_version : undefined,
  }));
}

/** Rewrites a record kept in the numbering before the one history; true when there was one. */
function renumber(db: Database.Database, version: string): boolean {
  const records = renumberedRecords('sqlite', appliedMigrations(db), version);
  if (records === undefined) return false;
  db.exec('DELETE FROM schema_migrations');
  const insert = db.prepare('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (?, ?, ?, ?, ?)');
  for (const r of records) insert.run(r.version, r.name, r.appliedAt, r.checksum ?? null, r.latchkeyVersion ?? null);
  return true;
}

export function migrate(db: Database.Database, migrations: Migration[], now: number, version = latchkeyVersion): MigrationRun {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  // The record's own columns, added in place to the table older builds made, and the record in the
  // numbers of the one history, in one transaction before anything else (looked at under the write
  // lock: two processes upgrading one file at once add each column once and rewrite the record once).
  const renumbered = db
    .transaction(() => {
      const columns = new Set((db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[]).map((c) => c.name));
      if (!columns.has('checksum')) db.exec('ALTER TABLE schema_migrations ADD COLUMN checksum TEXT');
      if (!columns.has('latchkey_version')) db.exec('ALTER TABLE schema_migrations ADD COLUMN latchkey_version TEXT');
      return renumber(db, version);
    })
    .immediate();

  const history = appliedMigrations(db);
  const from = schemaVersion(history);
  const fill = db.prepare('UPDATE schema_migrations SET checksum = ? WHERE version = ? AND checksum IS NULL');
  const missing = checkMigrationHistory(history, migrations, version);
  if (missing.length > 0) db.transaction(() => missing.forEach((m) => fill.run(m.checksum, m.version))).immediate();

  const isApplied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at, checksum, latchkey_version) VALUES (?, ?, ?, ?, ?)');
  const applied: string[] = [];
  for (const migration of migrations) {
    const apply = db.transaction(() => {
      if (isApplied.get(migration.version)) return false;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, now, migrationChecksum(migration.sql), version);
      return true;
    });
    if (apply.immediate()) applied.push(migration.name);
  }
  return { from, to: Math.max(from, schemaVersion(migrations)), applied, renumbered };
}

/**
 * For a connection that only reads (a listing command, which may run where the file cannot be
 * written): the record is checked as migrate() checks it — a database a newer build upgraded is
 * refused with the same line — and nothing is written. A database that still needs migrations is
 * refused too, naming them, since this build's statements would misread the older schema.
 */
export function checkMigrated(db: Database.Database, migrations: Migration[], version = latchkeyVersion): MigrationRun {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  const columns = new Set((db.prepare('PRAGMA table_info(schema_migrations)').all() as { name: string }[]).map((c) => c.name));
  const upgrade =
    'a command that only reads does not upgrade it: start the server on it, or run an admin command that changes something, where the file can be written (take a backup first)';
  if (table === undefined) throw new MigrationHistoryError(`the file holds no Latchkey database yet; ${upgrade}`);
  if (!columns.has('checksum') || !columns.has('latchkey_version') || renumberedRecords('sqlite', appliedMigrations(db), version) !== undefined)
    throw new MigrationHistoryError(`the database was made by an older Latchkey and its record of migrations needs rewriting; ${upgrade}`);
  const history = appliedMigrations(db);
  checkMigrationHistory(history, migrations, version);
  const done = new Set(history.map((h) => h.version));
  const pending = migrations.filter((m) => !done.has(m.version));
  const from = schemaVersion(history);
  if (pending.length > 0)
    throw new MigrationHistoryError(
      `the database is at schema version ${from} and needs the migrations ${pending.map((m) => m.name.replace(/\.sql$/, '')).join(', ')}; ${upgrade}`,
    );
  return { from, to: from, applied: [], renumbered: false };
}
