import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (seconds on a clean clone's CI run, two workers), started first:
 * with no cache of earlier runs vitest orders files by size, and a small but slow file left to the
 * end (the bench's smoke run is ~90 s) is the suite's tail while the other worker sits idle.
 * Longest first, the two workers finish close together. Files not listed follow in vitest's order.
 */
const slowestFirst = [
  'test/e2e/bench.e2e.test.ts', // ~90
  'test/store/postgres_conformance.test.ts', // ~78
  'test/e2e/cli_client.e2e.test.ts', // ~41
  'test/e2e/bench_postgres.e2e.test.ts', // ~41
  'test/store/store_conformance.test.ts', // ~41
  'test/e2e/browser.e2e.test.ts', // ~25
  'test/e2e/upgrade.e2e.test.ts', // ~22
  'test/e2e/passkeys.e2e.test.ts', // ~20
  'test/e2e/account.e2e.test.ts', // ~19
  'test/e2e/hardening.e2e.test.ts', // ~18
  'test/e2e/admin.e2e.test.ts', // ~17
  'test/e2e/machine_clients.e2e.test.ts', // ~17
  'test/e2e/credential_helpers.e2e.test.ts', // ~17
  'test/e2e/postgres_faults.e2e.test.ts', // ~15
  'test/e2e/server_process.e2e.test.ts', // ~14
  'test/e2e/connectors.e2e.test.ts', // ~14
  'test/e2e/key_safety.e2e.test.ts', // ~10
  'test/e2e/password_reset.e2e.test.ts', // ~10
];

class SlowestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = slowestFirst.indexOf(relative(process.cwd(), file.moduleId).split('\\').join('/'));
      return at === -1 ? slowestFirst.length : at;
    };
    // Array.prototype.sort is stable: the files not listed keep vitest's own order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Vitest's default on this 2-core machine is one worker (cores - 1): every file in turn. Most of
    // the suite's time is spent waiting — on child processes, Chromium, PostgreSQL, slapd — so two
    // files at a time roughly halve the wall time without starving either. Every file owns its
    // ports, temporary folders and PostgreSQL schemas, so files are independent.
    maxWorkers: 2,
    sequence: { sequencer: SlowestFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default'],
  },
});
