/**
 * `npm run bench --postgres` as a smoke run (when the tests have a PostgreSQL server): device
 * authorizations and device-flow issuance on one instance, measured in the same rounds beside two
 * instances sharing one database and beside SQLite (the two ratio targets), each set-up on a
 * database of its own that the bench drops afterwards. RS256: the bench seeds as many device codes
 * as the signing rate lets the server redeem, a few thousand here against tens of thousands with ES256.
 */
import pg from 'pg';
import { expect, it } from 'vitest';
import { describeWithPostgres, pgTestUrl } from '../helpers/postgres.js';
import { bench, expectOnlyExpectedAnswers } from '../helpers/bench.js';

describeWithPostgres('npm run bench --postgres (smoke run)', () => {
  it('runs on PostgreSQL with one instance, beside two sharing the database and beside SQLite, and drops its databases', async () => {
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
    const { report } = bench([
      '--alg',
      'RS256',
      '--workers',
      '',
      '--scales',
      '',
      '--scenarios',
      'device_authorization,device_token_issuance',
      '--postgres',
      pgTestUrl ?? '',
    ]);
    expect(report.runs.map((r) => [r.label, r.database, r.instances, r.measuredAlongside])).toEqual([
      ['RS256, 1 worker', 'sqlite', 1, undefined],
      ['RS256, PostgreSQL, 1 instance', 'postgresql', 1, undefined],
      ['RS256, PostgreSQL, 2 instances', 'postgresql', 2, 'RS256, PostgreSQL, 1 instance'],
      ['RS256, SQLite, beside PostgreSQL', 'sqlite', 1, 'RS256, PostgreSQL, 1 instance'],
    ]);
    for (const run of report.runs) expect(run.scenarios.map((s) => s.scenario)).toEqual(['device_authorization', 'device_token_issuance']);
    for (const run of report.runs) expectOnlyExpectedAnswers(run.scenarios, run.label);
    // The ratio to SQLite is to SQLite measured in the same rounds.
    const sqliteBeside = report.runs[3]?.scenarios[0]?.requestsPerSecond ?? 0;
    const onePostgres = report.runs[1]?.scenarios[0]?.requestsPerSecond ?? 0;
    const ratio = report.targets.find((t) => t.target.startsWith('PostgreSQL device_authorization (1 instance)'));
    expect(ratio?.value).toContain(`${((onePostgres / sqliteBeside) * 100).toFixed(0)}%`);
    const rateOf = (run: number, scenario: string) => report.runs[run]?.scenarios.find((s) => s.scenario === scenario)?.requestsPerSecond ?? 0;
    const issuanceRatio = report.targets.find((t) => t.target.startsWith('PostgreSQL device_token_issuance (1 instance)'));
    expect(issuanceRatio?.value).toContain(`${((rateOf(1, 'device_token_issuance') / rateOf(3, 'device_token_issuance')) * 100).toFixed(0)}%`);
    expect(report.targets.map((t) => t.target)).toEqual(
      expect.arrayContaining([expect.stringContaining('PostgreSQL device_authorization (1 instance)'), expect.stringContaining('2 instances')]),
    );
    expect(await benchDatabases()).toBe(before);
  }, 300_000);
});
