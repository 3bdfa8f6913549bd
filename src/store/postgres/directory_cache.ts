/**
 * The directory cache of the server's PostgreSQL store: clients, users with their roles, APIs and
 * connectors are read on nearly every request, and each of those reads was a round trip to the
 * database (on a device authorization, a third of the instance's work and more of the database's).
 *
 * Kept honest across instances by LISTEN/NOTIFY: triggers (migration 0012) announce every change to
 * those tables on the channel latchkey_directory when it commits, and each instance drops its whole
 * cache when it hears of one. An instance's own writes drop it at once too, without waiting for the
 * announcement (cached_directory.ts: the verbs that write the directory say so).
 *
 * Hearing is proved, not assumed: every `heartbeatMs` the instance announces a probe from another
 * connection (the store's pool) and must hear it on the listening one, as it would hear another
 * instance's change. Cached records are served only while the last probe was heard less than one
 * and a half heartbeats ago; before the first one, and whenever the connection breaks or stops
 * hearing (a network break, a database restart, a pooler in transaction mode that hands LISTEN's
 * session back to its pool), every lookup reads the database, as without a cache.
 *
 * What this gives up against SQLite's check of directory_version at each lookup: a change made by
 * another instance is seen here once its announcement arrives, normally within a millisecond of
 * its commit, and never later than one and a half heartbeats (3 s) when announcements stop
 * arriving. Whatever must hold at the moment of a change is re-checked in the transaction that
 * depends on it (a refresh token is stored only while the user's tokens_revoked_at is what was read).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { deepFreeze } from '../../deep_freeze.js';
import type { RecordCache } from '../cached_directory.js';

export const directoryChannel = 'latchkey_directory';

/** Each cache starts over beyond this many records, so memory stays bounded. */
const maxCachedRecords = 10_000;
/** How often a probe announcement must be heard back (and how long one may take). */
const defaultHeartbeatMs = 2_000;
/**
 * Reconnection waits this long at first, doubling up to the maximum: a database back from a
 * restart is heard again within seconds, and one that stays away is asked at most every 5 s.
 */
const firstRetryMs = 250;
const maxRetryMs = 5_000;
/** Connecting, LISTEN and closing may take this long before the connection counts as broken. */
const connectionTimeoutMs = 10_000;

export interface DirectoryCacheOptions {
  /** A client with the store's connection settings, for the listening connection. */
  connect: () => pg.Client;
  /** Where the store's tables are (the announcements' payload). */
  schema: () => Promise<string>;
  /** Sends an announcement from another connection than the listening one (the store's pool). */
  announce: (payload: string) => Promise<unknown>;
  heartbeatMs?: number;
}

export class DirectoryCache implements RecordCache {
  private readonly maps = new Set<Map<string, object>>();
  /** Bumped by every drop: a lookup that started before one does not keep what it read. */
  private generation = 0;
  /** When the last probe was heard back (ms, this process's clock); 0: not hearing. */
  private heardAt = 0;
  private listener: pg.Client | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = firstRetryMs;
  private stopped = false;
  private readonly heartbeatMs: number;

  constructor(private readonly options: DirectoryCacheOptions) {
    this.heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs;
  }

  /** A map of records for the cache to keep and drop; lookups go through lookup(). */
  map<T extends object>(): Map<string, T> {
    const map = new Map<string, T>();
    this.maps.add(map);
    return map;
  }

  /** Whether cached records are being served now: a probe was heard back lately. */
  get active(): boolean {
    return this.heardAt > 0 && Date.now() - this.heardAt < this.heartbeatMs * 1.5;
  }

  async lookup<T extends object>(map: Map<string, T>, key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    if (!this.active) return load();
    const hit = map.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const record = await load();
    // Misses are not cached (keys come from requests); nor is what a change may have overtaken.
    // `active` reads the clock: it may have turned false while the record loaded.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    if (record === undefined || generation !== this.generation || !this.active) return record;
    if (map.size >= maxCachedRecords) map.clear();
    const frozen = deepFreeze(record);
    map.set(key, frozen);
    return frozen;
  }

  /** Drops everything cached: a change was announced, or made here. */
  invalidate(): void {
    this.generation++;
    for (const map of this.maps) map.clear();
  }

  /** Starts listening; resolves once the first attempt has succeeded or failed (it then retries). */
  async start(): Promise<void> {
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    this.heardAt = 0;
    this.invalidate();
    const client = this.listener;
    this.listener = undefined;
    if (client) await within(connectionTimeoutMs, client.end()).catch(() => undefined);
  }

  /**
   * Connects, LISTENs, and proves that announcements from elsewhere arrive (a probe announced
   * through the pool must be heard back); only then are cached records served, and only while the
   * probes, one every heartbeat, keep being heard.
   */
  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = this.options.connect();
    this.listener = client;
    const down = () => this.down(client);
    client.on('error', down);
    client.on('end', down);
    try {
      await within(connectionTimeoutMs, client.connect());
      const schema = await this.options.schema();
      let awaited: { probe: string; heard(): void } | undefined;
      client.on('notification', (message) => {
        if (message.channel !== directoryChannel) return;
        if (message.payload === schema) this.invalidate();
        else if (awaited !== undefined && message.payload === awaited.probe) awaited.heard();
      });
      const probe = () =>
        new Promise<void>((resolve, reject) => {
          const silent = setTimeout(() => reject(new Error('the probe announcement was not heard back')), this.heartbeatMs);
          silent.unref();
          const probe = `probe:${schema}:${randomUUID()}`;
          awaited = {
            probe,
            heard: () => {
              clearTimeout(silent);
              awaited = undefined;
              resolve();
            },
          };
          this.options.announce(probe).catch((err: unknown) => {
            clearTimeout(silent);
            reject(err instanceof Error ? err : new Error(String(err)));
          });
        });
      await within(connectionTimeoutMs, client.query(`LISTEN ${directoryChannel}`));
      await probe();
      if (this.listener !== client) return;
      // What was cached before (nothing, or from before a break) may have missed announcements.
      this.invalidate();
      this.heardAt = Date.now();
      this.retryMs = firstRetryMs;
      this.heartbeat = setInterval(() => {
        probe().then(
          () => (this.heardAt = Date.now()),
          () => down(),
        );
      }, this.heartbeatMs);
      this.heartbeat.unref();
    } catch {
      down();
    }
  }

  private down(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.heardAt = 0;
    this.invalidate();
    clearInterval(this.heartbeat);
    within(connectionTimeoutMs, client.end()).catch(() => undefined);
    if (this.stopped) return;
    this.retry = setTimeout(() => void this.listen(), this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, maxRetryMs);
  }
}

/** `promise`, or a rejection after `ms`. */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
