/**
 * The store-backed limiters (for stores several instances share) answer exactly as the in-memory
 * ones: the same random runs of events, checks, attempts, undos and resets, with time moving on,
 * give the same answers from both. Run here on the SQLite store's verbs; the store conformance
 * suite checks the verbs themselves on every store.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { manualClock } from '../../src/clock.js';
import { BackoffLimiter, RateLimiter } from '../../src/limits/rate_limit.js';
import { SharedBackoffLimiter, SharedWindowLimiter } from '../../src/limits/shared_rate_limit.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';

const keys = ['203.0.113.9', '198.51.100.7'];

/**
 * One store for all the runs of a property, each run on a bucket of its own (its counters are then
 * its own): opening a store, migrations and all, is not what is tested, and hundreds of opens were
 * most of this file's time.
 */
async function withRunsOnOneStore(check: (store: SqliteStore, bucket: () => string) => Promise<void>): Promise<void> {
  const store = new SqliteStore({ path: ':memory:', now: Math.floor(manualClock()()) });
  let runs = 0;
  try {
    await check(store, () => `bucket-${++runs}`);
  } finally {
    await store.close();
  }
}

describe('SharedWindowLimiter answers as RateLimiter', () => {
  it('over random runs of hits, checks and time', async () => {
    await withRunsOnOneStore((store, bucket) =>
      fc.assert(
        fc.asyncProperty(
          fc.record({ limit: fc.integer({ min: 1, max: 4 }), windowSeconds: fc.integer({ min: 1, max: 30 }) }),
          fc.array(fc.tuple(fc.constantFrom('hit', 'check', 'undo', 'wait'), fc.constantFrom(...keys), fc.integer({ min: 0, max: 20 })), { maxLength: 40 }),
          async (rule, steps) => {
            const clock = manualClock();
            const memory = new RateLimiter(rule, clock);
            const shared = new SharedWindowLimiter(store, bucket(), rule, clock);
            for (const [action, key, seconds] of steps) {
              if (action === 'wait') clock.advance(seconds);
              else if (action === 'hit') expect(await shared.hit(key)).toEqual(memory.hit(key));
              else if (action === 'undo') {
                await shared.undo(key);
                memory.undo(key);
              } else expect(await shared.check(key)).toEqual(memory.check(key));
            }
          },
        ),
        { numRuns: 150 },
      ),
    );
  });
});

describe('SharedBackoffLimiter answers as BackoffLimiter', () => {
  it('over random runs of attempts, failures, undos, resets, checks and time', async () => {
    await withRunsOnOneStore((store, bucket) =>
      fc.assert(
        fc.asyncProperty(
          fc.record({ limit: fc.integer({ min: 1, max: 4 }), windowSeconds: fc.integer({ min: 1, max: 60 }) }),
          fc.array(
            fc.tuple(
              fc.constantFrom('attempt', 'failure', 'undo', 'reset', 'check', 'wait', 'longWait'),
              fc.constantFrom(...keys),
              fc.integer({ min: 0, max: 200 }),
            ),
            { maxLength: 40 },
          ),
          async (rule, steps) => {
            const clock = manualClock();
            const memory = new BackoffLimiter(rule, clock);
            const shared = new SharedBackoffLimiter(store, bucket(), rule, clock);
            for (const [action, key, seconds] of steps) {
              switch (action) {
                case 'wait':
                  clock.advance(seconds);
                  break;
                case 'longWait':
                  clock.advance(BackoffLimiter.maxDelaySeconds + seconds * 10);
                  break;
                case 'attempt':
                  expect(await shared.attempt(key)).toEqual(memory.attempt(key));
                  break;
                case 'failure':
                  await shared.failure(key);
                  memory.failure(key);
                  break;
                case 'undo':
                  await shared.undo(key);
                  memory.undo(key);
                  break;
                case 'reset':
                  await shared.reset(key);
                  memory.reset(key);
                  break;
                case 'check':
                  expect(await shared.check(key)).toEqual(memory.check(key));
              }
            }
          },
        ),
        { numRuns: 400 },
      ),
    );
  });

  it('a refused attempt leaves no trace: the wait still ends when it would have', async () => {
    const clock = manualClock();
    const store = new SqliteStore({ path: ':memory:', now: Math.floor(clock()) });
    const rule = { limit: 1, windowSeconds: 10 };
    const memory = new BackoffLimiter(rule, clock);
    const shared = new SharedBackoffLimiter(store, 'bucket', rule, clock);
    expect(await shared.attempt('alice')).toEqual(memory.attempt('alice'));
    clock.advance(3);
    const refused = await shared.attempt('alice');
    expect(refused).toEqual({ limited: true, retryAfter: 7 });
    expect(refused).toEqual(memory.attempt('alice'));
    clock.advance(3);
    expect(await shared.check('alice')).toEqual({ limited: true, retryAfter: 4 });
    clock.advance(4);
    expect(await shared.attempt('alice')).toEqual(memory.attempt('alice'));
    await store.close();
  });

  it('parallel attempts cannot all slip past the limit: each is counted before it is decided', async () => {
    const clock = manualClock();
    const store = new SqliteStore({ path: ':memory:', now: Math.floor(clock()) });
    const shared = new SharedBackoffLimiter(store, 'bucket', { limit: 3, windowSeconds: 30 }, clock);
    const answers = await Promise.all(Array.from({ length: 20 }, () => shared.attempt('alice')));
    expect(answers.filter((a) => !a.limited)).toHaveLength(3);
    await store.close();
  });
});
