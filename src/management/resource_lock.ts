/**
 * Conditional updates (If-Match) read, compare and write: two requests for the same resource must
 * not interleave those steps, or both would see the old ETag and both would win. Requests for one
 * resource run one after the other in this process; the lock covers one server process, not several
 * behind a load balancer (the store has no conditional write yet).
 */
import type { Store } from '../store/store.js';

/** Per database: two test servers in one process do not share locks. */
const queuesByStore = new WeakMap<Store, Map<string, Promise<unknown>>>();

/** Runs `work` alone for `key` (e.g. `client:web`); `store` is the database the resource lives in. */
export async function withResourceLock<T>(store: Store, key: string, work: () => Promise<T>): Promise<T> {
  let queues = queuesByStore.get(store);
  if (!queues) queuesByStore.set(store, (queues = new Map<string, Promise<unknown>>()));
  const before = queues.get(key) ?? Promise.resolve();
  const run = before.then(work, work);
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
