/**
 * What a database's record of applied migrations must agree with before anything runs, on both
 * stores (what Flyway calls validation):
 * - a migration this build does not have (by number and name) means a newer Latchkey upgraded the
 *   database: refused, with one line naming the version that did it, because this build would
 *   misread what the newer one wrote (and could write what the newer one misreads);
 * - a migration whose file differs from the one the database ran was edited after its release:
 *   refused, because databases that ran the earlier text never get the change.
 * Checksums are SHA-256 of the file with line endings normalised (a checkout on Windows is not an
 * edit). A record from before checksums were kept takes the file's checksum as it stands.
 */
import { createHash } from 'node:crypto';
import type { Migration } from './migration_files.js';

export interface AppliedMigration {
  version: number;
  name: string;
  /** Undefined for a migration applied before checksums were recorded. */
  checksum: string | undefined;
  /** The Latchkey version that applied it; undefined before versions were recorded. */
  latchkeyVersion: string | undefined;
}

export class MigrationHistoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationHistoryError';
  }
}

export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql.replace(/\r\n/g, '\n')).digest('hex');
}

/** The schema version a set of migrations brings a database to (0: none). */
export function schemaVersion(migrations: { version: number }[]): number {
  return Math.max(0, ...migrations.map((m) => m.version));
}

/**
 * Throws MigrationHistoryError when the database was upgraded by a newer build, or ran a migration
 * whose file has changed since; returns the records that need their checksum filled in.
 */
export function checkMigrationHistory(applied: AppliedMigration[], known: Migration[], thisVersion: string): AppliedMigration[] {
  const byVersion = new Map(known.map((m) => [m.version, m]));
  // Known by number and name: one history numbers both dialects, so a record of the same number
  // under another name is another history's, which this build cannot read either.
  const unknown = applied.filter((a) => byVersion.get(a.version)?.name !== a.name).sort((a, b) => b.version - a.version);
  const newest = unknown[0];
  if (newest !== undefined) {
    const writer = newest.latchkeyVersion === undefined ? 'a newer Latchkey' : `Latchkey ${newest.latchkeyVersion}`;
    throw new MigrationHistoryError(
      `the database was upgraded by ${writer} (schema version ${schemaVersion(applied)}, ${newest.name}); ` +
        `this is Latchkey ${thisVersion}, which knows schema versions up to ${schemaVersion(known)}: run ${writer === 'a newer Latchkey' ? 'that newer Latchkey' : `Latchkey ${newest.latchkeyVersion} or newer`}, or restore the backup made before the upgrade`,
    );
  }
  const missingChecksums: AppliedMigration[] = [];
  for (const record of applied) {
    const file = byVersion.get(record.version);
    if (file === undefined) continue; // every record is known: unknown ones were refused above
    const checksum = migrationChecksum(file.sql);
    if (record.checksum === undefined) {
      missingChecksums.push({ ...record, checksum });
    } else if (record.checksum !== checksum) {
      throw new MigrationHistoryError(
        `migration ${file.name} differs from the one this database applied (recorded checksum ${record.checksum.slice(0, 12)}…, file ${checksum.slice(0, 12)}…): ` +
          'a released migration must never be edited; restore the file as released and put the change in a new migration',
      );
    }
  }
  return missingChecksums;
}

/** What a migration run did, for the start log: the schema version before and after, and what it applied. */
export interface MigrationRun {
  from: number;
  to: number;
  applied: string[];
  /** Whether the record was kept in the numbering before the one history and was rewritten to it. */
  renumbered: boolean;
}
