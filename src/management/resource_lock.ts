/**
 * Conditional updates (If-Match) read, compare and write: two requests for the same resource must
 * not interleave those steps, or both would see the old ETag and both would win. Requests for one
 * resource run one after the other in this process; the lock covers one server process, not several
 * behind a load balancer (the store has no conditional write yet).
 */
const queues = new Map<string, Promise<unknown>>();

export async function withResourceLock<T>(key: string, work: () => Promise<T>): Promise<T> {
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
