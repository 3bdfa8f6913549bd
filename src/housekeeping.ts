/**
 * Housekeeping: every LATCHKEY_HOUSEKEEPING_INTERVAL seconds, expired rows are removed in batches
 * of a few hundred, yielding to the event loop between batches, so a large backlog never holds up
 * requests (better-sqlite3 is synchronous: one huge DELETE would). Then the space they held goes
 * back to the file system (SQLite's incremental vacuum), also in steps, so a database that once
 * grew shrinks again. The stored audit log keeps LATCHKEY_AUDIT_RETENTION of events.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { epochSeconds, type Clock } from './clock.js';
import type { PurgeCounts, Store } from './store/store.js';

export const purgeBatchSize = 500;

export async function purgeAll(store: Store, clock: Clock, batchSize = purgeBatchSize, keepGoing: () => boolean = () => true): Promise<PurgeCounts> {
  const total: PurgeCounts = {
    authorizationCodes: 0,
    deviceGrants: 0,
    sessions: 0,
    refreshTokens: 0,
    revokedAccessTokens: 0,
    emailTokens: 0,
    usedOnce: 0,
    registrationTokens: 0,
    pushedRequests: 0,
  };
  for (;;) {
    const counts = await store.purgeExpired(epochSeconds(clock), batchSize);
    for (const key of Object.keys(total) as (keyof PurgeCounts)[]) total[key] += counts[key];
    if (Object.values(counts).every((n) => n < batchSize)) return total;
    await yieldToEventLoop();
    if (!keepGoing()) return total;
  }
}

/** Removes audit events older than `retentionSeconds`, in batches, yielding between them; returns how many. */
export async function purgeAuditLog(
  store: Store,
  clock: Clock,
  retentionSeconds: number,
  batchSize = purgeBatchSize,
  keepGoing: () => boolean = () => true,
): Promise<number> {
  const before = Math.floor((clock() - retentionSeconds) * 1000);
  let total = 0;
  for (;;) {
    const removed = await store.purgeAuditEvents(before, batchSize);
    total += removed;
    if (removed < batchSize || !keepGoing()) return total;
    await yieldToEventLoop();
  }
}

/** Releases free pages in steps of `pagesPerStep`, yielding between steps; returns how many. */
export async function reclaimAll(store: Store, keepGoing: () => boolean = () => true, pagesPerStep = 2000): Promise<number> {
  let total = 0;
  for (;;) {
    const released = await store.reclaimSpace(pagesPerStep);
    total += released;
    if (released < pagesPerStep || !keepGoing()) return total;
    await yieldToEventLoop();
  }
}

export interface Housekeeping {
  /** Stops the timer and waits for a purge in progress to end (before the store is closed). */
  stop(): Promise<void>;
}

export function startHousekeeping(store: Store, clock: Clock, log: FastifyBaseLogger, intervalSeconds: number, auditRetentionSeconds: number): Housekeeping {
  let running: Promise<void> | undefined;
  let stopped = false;
  const timer = setInterval(() => {
    if (running) return;
    running = purgeAll(store, clock, purgeBatchSize, () => !stopped)
      .then(async (counts) => {
        const auditEvents = await purgeAuditLog(store, clock, auditRetentionSeconds, purgeBatchSize, () => !stopped);
        const pagesReleased = await reclaimAll(store, () => !stopped);
        if (Object.values(counts).some((n) => n > 0) || auditEvents > 0 || pagesReleased > 0)
          log.info({ event: 'housekeeping.purged', ...counts, auditEvents, pagesReleased }, 'housekeeping');
      })
      .then(
        () => undefined,
        (err: unknown) => log.error({ err }, 'housekeeping failed'),
      )
      .finally(() => {
        running = undefined;
      });
  }, intervalSeconds * 1000);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
