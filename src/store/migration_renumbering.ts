/**
 * The numbering before the one history. Until then SQLite and PostgreSQL numbered their migrations
 * each on its own: SQLite's 0009_roles was PostgreSQL's 0007_roles, PostgreSQL's 0001_init held
 * what SQLite's first three files did. Now both follow one history, the same number and name for
 * the same change (migrations/sqlite/, migrations/postgres/), and a database recorded under the
 * old numbering has its record rewritten to the new one before anything else runs, so that no
 * migration is applied twice and none is skipped. The files themselves were renamed, not edited:
 * a renamed file keeps its checksum, and its record keeps the checksum and the time it was applied.
 *
 * After the rewrite the builds before it refuse the database as upgraded by a newer Latchkey (its
 * record holds numbers and names they do not have), which is what they should do. So that their
 * refusal names this build, a record the rewrite changes carries this build's version as the one
 * that wrote it; a record it leaves as it was keeps the version that applied it.
 */
import type { AppliedMigration } from './migration_history.js';

export type Dialect = 'sqlite' | 'postgres';

/** A row of schema_migrations, as the runners read it for a rewrite. */
export interface MigrationRecord extends AppliedMigration {
  appliedAt: number;
}

/**
 * Each file of the numbering before, with the files of the one history that together hold what it
 * did. A file of the one history with nothing to do in a dialect (its body is a comment saying
 * why) is listed with the old file that holds its content there, or with the old file that follows
 * it: a database that ran that one is past it. Fixed for good: it describes released databases.
 */
const numberingBefore: Record<Dialect, ReadonlyMap<string, readonly string[]>> = {
  sqlite: new Map([
    ['0001_init.sql', ['0001_init.sql']],
    ['0002_authorization_code.sql', ['0002_authorization_code.sql']],
    ['0003_directory_version.sql', ['0003_directory_version.sql']],
    ['0004_rate_limits.sql', ['0004_rate_limits.sql']],
    ['0005_hardening.sql', ['0005_hardening.sql']],
    ['0006_connectors.sql', ['0006_connectors.sql']],
    ['0007_second_factors.sql', ['0007_second_factors.sql']],
    ['0008_accounts.sql', ['0008_accounts.sql']],
    ['0009_roles.sql', ['0009_roles.sql']],
    ['0010_registration.sql', ['0010_registration.sql']],
    ['0011_par.sql', ['0011_par.sql']],
    ['0012_dpop.sql', ['0012_dpop.sql']],
    ['0013_profile_claims.sql', ['0013_profile_claims.sql']],
    // 0014_directory_notify is PostgreSQL's; SQLite has nothing to do there.
    ['0014_level_intermediate_builds.sql', ['0014_directory_notify.sql', '0015_level_intermediate_builds.sql']],
    ['0015_lost_answers.sql', ['0016_lost_answers.sql']],
    ['0016_factor_enrolment_links.sql', ['0017_factor_enrolment_links.sql']],
    ['0017_removed_identities.sql', ['0018_removed_identities.sql']],
  ]),
  postgres: new Map([
    // PostgreSQL's first file was written after SQLite's first three and holds what they do
    // (except the directory_version counter, which PostgreSQL never had).
    ['0001_init.sql', ['0001_init.sql', '0002_authorization_code.sql', '0003_directory_version.sql']],
    ['0002_rate_limits.sql', ['0004_rate_limits.sql']],
    ['0003_hardening.sql', ['0005_hardening.sql']],
    ['0004_connectors.sql', ['0006_connectors.sql']],
    ['0005_second_factors.sql', ['0007_second_factors.sql']],
    ['0006_accounts.sql', ['0008_accounts.sql']],
    ['0007_roles.sql', ['0009_roles.sql']],
    ['0008_registration.sql', ['0010_registration.sql']],
    ['0009_par.sql', ['0011_par.sql']],
    ['0010_dpop.sql', ['0012_dpop.sql']],
    ['0011_profile_claims.sql', ['0013_profile_claims.sql']],
    ['0012_directory_notify.sql', ['0014_directory_notify.sql']],
    ['0013_level_intermediate_builds.sql', ['0015_level_intermediate_builds.sql']],
    ['0014_lost_answers.sql', ['0016_lost_answers.sql']],
    ['0015_factor_enrolment_links.sql', ['0017_factor_enrolment_links.sql']],
    ['0016_removed_identities.sql', ['0018_removed_identities.sql']],
  ]),
};

const versionOf = (name: string): number => Number(name.slice(0, 4));
/** The part of a file name after its number: a renamed file keeps it. */
const changeOf = (name: string): string => name.slice(5);

/** The names of the one history as far as the renumbering goes. */
function oneHistoryNames(dialect: Dialect): Set<string> {
  return new Set([...numberingBefore[dialect].values()].flat());
}

/**
 * The record in the numbers of the one history, or undefined when there is nothing to rewrite:
 * the record is not in the numbering before (a new database, one already rewritten, or one that
 * stopped early enough that both numberings agree), or it holds a migration the numbering before
 * does not know, which the history check then refuses as the work of a newer build.
 *
 * A record is in the numbering before when it holds a file only that numbering has (on SQLite
 * 0014_level_intermediate_builds.sql and later, on PostgreSQL 0002_rate_limits.sql and later);
 * where the two agree (SQLite 0001–0013, PostgreSQL 0001) the files are the same either way.
 */
export function renumberedRecords(dialect: Dialect, records: MigrationRecord[], thisVersion: string): MigrationRecord[] | undefined {
  const before = numberingBefore[dialect];
  const oneHistory = oneHistoryNames(dialect);
  const inNumberingBefore = (r: MigrationRecord) => before.has(r.name) && r.version === versionOf(r.name);
  if (!records.some((r) => inNumberingBefore(r) && !oneHistory.has(r.name))) return undefined;
  if (!records.every(inNumberingBefore)) return undefined;
  return records.flatMap((record) =>
    (before.get(record.name) ?? []).map((name): MigrationRecord => {
      const sameFile = changeOf(name) === changeOf(record.name);
      return {
        version: versionOf(name),
        name,
        appliedAt: record.appliedAt,
        // The renamed file is the one the database ran. A file with nothing to do here takes its
        // own checksum from the history check, as a record from before checksums does.
        checksum: sameFile ? record.checksum : undefined,
        latchkeyVersion: name === record.name ? record.latchkeyVersion : thisVersion,
      };
    }),
  );
}
