/**
 * Applies the numbered SQL files of migrations/ in order, each in its own IMMEDIATE transaction
 * and recorded in schema_migrations, so an interrupted upgrade leaves the database at the last
 * complete version and two processes starting at once never apply a file twice.
 */
import type Database from 'better-sqlite3';
import type { Migration } from '../migration_files.js';

export { readMigrations, type Migration } from '../migration_files.js';

/** Returns the names of the migrations applied by this call. */
export function migrate(db: Database.Database, migrations: Migration[], now: number): string[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const isApplied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?');
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const applied: string[] = [];
  for (const migration of migrations) {
    const apply = db.transaction(() => {
      if (isApplied.get(migration.version)) return false;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, now);
      return true;
    });
    if (apply.immediate()) applied.push(migration.name);
  }
  return applied;
}
