/**
 * What the start says it did to the database, and what going back means: there are no
 * down-migrations, and not every older build refuses an upgraded database (the earliest 0.1.0
 * builds start on it and refuse everyone whose password is stored with Argon2id), so the start
 * line names the one way back — the backup made before the upgrade — and never claims that older
 * builds refuse the database.
 */
import { describe, expect, it } from 'vitest';
import { upgradeNotices } from '../../src/prepare_database.js';

describe('upgradeNotices', () => {
  it('an upgrade says what ran and that going back means restoring the backup made before it', () => {
    expect(upgradeNotices({ from: 22, to: 24, applied: ['0023_resource_leases.sql', '0024_readiness_probe.sql'], renumbered: false })).toEqual([
      'Upgraded the database from schema version 22 to 24: 0023_resource_leases, 0024_readiness_probe; to go back to an older build, restore the backup made before this upgrade',
    ]);
  });

  it('the renumbering says which builds refuse the database and which start on it and refuse people, and the way back', () => {
    const [renumbered] = upgradeNotices({ from: 17, to: 24, applied: [], renumbered: true });
    expect(renumbered).toBe(
      "Renumbered the database's record of migrations to the one history SQLite and PostgreSQL now share: to go back to an older build, restore the backup made before this upgrade. " +
        'Builds that check the record refuse this database; the earliest 0.1.0 builds do not check, start on it, and refuse everyone whose password is now stored with Argon2id (see Upgrades in docs/operating.md)',
    );
    expect(renumbered).not.toContain('will refuse this database');
  });

  it('a new database, or one already at this schema, is nothing to report', () => {
    expect(upgradeNotices({ from: 0, to: 24, applied: ['0001_init.sql'], renumbered: false })).toEqual([]);
    expect(upgradeNotices({ from: 24, to: 24, applied: [], renumbered: false })).toEqual([]);
  });
});
