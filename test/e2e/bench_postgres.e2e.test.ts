/**
 * `npm run bench --postgres` in its quick form (when the tests have a PostgreSQL server): device
 * authorizations and userinfo on one instance and on two sharing one database, each run on a
 * database of its own that the bench drops afterwards.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { describeWithPostgres, pgTestUrl } from '../helpers/postgres.js';
import { bench, expectOnlyExpectedAnswers } from '../helpers/bench.js';

describeWithPostgres('npm run bench --postgres (quick)', () => {
  it('runs on PostgreSQL with one instance and two sharing the database, and drops its databases', async () => {
    const benchDatabases = async () => {
      const client = new pg.Client({ connectionString: pgTestUrl });
      await client.connect();
      try {
        return (await client.query("SELECT count(*)::int AS n FROM pg_database WHERE datname LIKE 'latchkey_bench_%'")).rows[0].n as number;
      } finally {
        await client.end();
      }
    };
    const before = await benchDatabases();
    const { report } = bench(['--alg', 'ES256', '--workers', '', '--scales', '', '--scenarios', 'device_authorization,userinfo', '--postgres', pgTestUrl ?? '']);
    expect(report.runs.map((r) => [r.label, r.database, r.instances])).toEqual([
      ['ES256, 1 worker', 'sqlite', 1],
      ['ES256, PostgreSQL, 1 instance', 'postgresql', 1],
      ['ES256, PostgreSQL, 2 instances', 'postgresql', 2],
    ]);
    for (const run of report.runs) expectOnlyExpectedAnswers(run.scenarios, run.label);
    expect(report.targets.map((t) => t.target)).toEqual(expect.arrayContaining([expect.stringContaining('PostgreSQL device_authorization (1 instance)'), expect.stringContaining('2 instances')]));
    expect(await benchDatabases()).toBe(before);
  }, 300_000);
});
