/**
 * Conditional updates (If-Match, RFC 9110 §13.1.1) read, compare and write: two requests for the
 * same resource must not interleave those steps, or both would see the old ETag and both would
 * win. That must hold across every server instance sharing the database (several behind a load
 * balancer), so the steps run under a lease the database hands to one holder at a time
 * (Store.takeResourceLease, one atomic statement). In front of it, requests for one resource in
 * this process queue in memory: only the first of them asks the database, none polls it in vain.
 *
 * A lease expires `leaseSeconds` after it is taken, so an instance that crashed while holding one
 * blocks the resource only until then. A request that finds the lease held retries with a short
 * backoff up to `waitMs`, then is answered 503 with Retry-After: a caller never hangs.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Store } from '../store/store.js';
import { Problem } from './problem.js';

/** Far longer than the few statements a change takes, short enough that a crashed holder is soon forgotten. */
const leaseSeconds = 15;
/** How long a request waits for another instance's lease before it is answered 503. */
const waitMs = 5_000;
/** The first retry comes this soon, each later one twice as late, up to the longest. */
const firstRetryMs = 10;
const longestRetryMs = 200;

/** Per database: two test servers in one process do not share queues. */
const queuesByStore = new WeakMap<Store, Map<string, Promise<unknown>>>();

/** Runs `work` alone for `key` (e.g. `client:web`) across every instance on `store`, the database the resource lives in. */
export async function withResourceLock<T>(store: Store, key: string, work: () => Promise<T>): Promise<T> {
  let queues = queuesByStore.get(store);
  if (!queues) queuesByStore.set(store, (queues = new Map<string, Promise<unknown>>()));
  const leased = () => withLease(store, key, work);
  const before = queues.get(key) ?? Promise.resolve();
  const run = before.then(leased, leased);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  try {
    return await run;
  } finally {
    if (queues.get(key) === settled) queues.delete(key);
  }
}

async function withLease<T>(store: Store, key: string, work: () => Promise<T>): Promise<T> {
  const holder = randomUUID();
  const started = Date.now();
  // By the database's clock, the one every instance compares expiries against.
  const expiresAt = (await store.databaseTime()) + leaseSeconds;
  let retryMs = firstRetryMs;
  while (!(await store.takeResourceLease(key, holder, expiresAt))) {
    if (Date.now() - started + retryMs > waitMs)
      throw new Problem(503, 'busy', 'Another server is changing this resource right now. Try again in a moment.', undefined, { 'retry-after': '1' });
    await sleep(retryMs);
    retryMs = Math.min(retryMs * 2, longestRetryMs);
  }
  try {
    return await work();
  } finally {
    // A lease that cannot be given back now (the database went away) expires by itself; the
    // answer is the work's, which has happened.
    await store.releaseResourceLease(key, holder).catch(() => undefined);
  }
}
