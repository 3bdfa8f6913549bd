import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Vitest's default on this 2-core machine is one worker (cores - 1): every file in turn. Most of
    // the suite's time is spent waiting — on child processes, Chromium, PostgreSQL, slapd — so two
    // files at a time roughly halve the wall time without starving either. Every file owns its
    // ports, temporary folders and PostgreSQL schemas, so files are independent.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default'],
  },
});
