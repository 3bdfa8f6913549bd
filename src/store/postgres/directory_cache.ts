/**
 * The directory cache of the server's PostgreSQL store: clients, users with their roles, APIs and
 * connectors are read on nearly every request, and each of those reads was a round trip to the
 * database (on a device authorization, a third of the instance's work and more of the database's).
 *
 * Kept honest across instances by LISTEN/NOTIFY: triggers (migration 0012) announce every change to
 * those tables on the channel latchkey_directory when it commits, and each instance drops its whole
 * cache when it hears of one. An instance's own writes drop it at once too, without waiting for the
 * announcement. While the listening connection is down (not yet up, broken, or not hearing its own
 * probe announcements back) nothing is cached: every lookup reads the database, as without a cache.
 *
 * What this gives up against SQLite's check of directory_version at each lookup: a change made by
 * another instance is seen here once its announcement arrives, normally within a millisecond of
 * its commit, rather than at once. Whatever must hold at once is re-checked in the transaction that
 * depends on it (a refresh token is stored only while the user's tokens_revoked_at is what was read).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { deepFreeze } from '../../deep_freeze.js';

export const directoryChannel = 'latchkey_directory';

/** Each cache starts over beyond this many records, so memory stays bounded. */
const maxCachedRecords = 10_000;
/** How often the listening connection must hear its own probe announcement, and how long that may take. */
const defaultHeartbeatMs = 5_000;
/** Reconnection waits this long at first, doubling up to the maximum. */
const firstRetryMs = 250;
const maxRetryMs = 30_000;

/** A write whose target table holds what the cache keeps (or, by a cascade, a user's roles). */
const directoryWrite = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE)\s+(?:TABLE\s+)?(?:clients|users|apis|connectors|user_roles|roles|role_permissions)\b/i;

export function changesDirectory(sql: string): boolean {
  return directoryWrite.test(sql);
}


export class DirectoryCache {
  private readonly maps = new Set<Map<string, object>>();
  /** Bumped by every drop: a lookup that started before one does not keep what it read. */
  private generation = 0;
  private listening = false;
  private listener: pg.Client | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = firstRetryMs;
  private stopped = false;

  /** `connect` makes a client with the store's connection settings; `schema` is where the store's tables are. */
  constructor(
    private readonly connect: () => pg.Client,
    private readonly schema: () => Promise<string>,
    private readonly heartbeatMs = defaultHeartbeatMs,
  ) {}

  /** A map of records for the cache to keep and drop; lookups go through lookup(). */
  map<T extends object>(): Map<string, T> {
    const map = new Map<string, T>();
    this.maps.add(map as Map<string, object>);
    return map;
  }

  /** Whether lookups are being cached now (the listening connection is up). */
  get active(): boolean {
    return this.listening;
  }

  async lookup<T extends object>(map: Map<string, T>, key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    if (!this.listening) return load();
    const hit = map.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const record = await load();
    // Misses are not cached (keys come from requests); nor is what a change may have overtaken.
    if (record === undefined || generation !== this.generation || !this.listening) return record;
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
    this.listening = false;
    this.invalidate();
    const client = this.listener;
    this.listener = undefined;
    await client?.end().catch(() => undefined);
  }

  /**
   * Connects, LISTENs, and proves that announcements arrive: it announces a probe of its own and
   * waits to hear it back. Only then does caching start. A connection that cannot hear (a pooler in
   * transaction mode hands LISTEN's session back to its pool) never turns the cache on.
   */
  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = this.connect();
    this.listener = client;
    const down = () => this.down(client);
    client.on('error', down);
    client.on('end', down);
    try {
      await client.connect();
      const schema = await this.schema();
      let awaited: { probe: string; heard(): void } | undefined;
      client.on('notification', (message) => {
        if (message.channel !== directoryChannel) return;
        if (message.payload === schema) this.invalidate();
        else if (awaited !== undefined && message.payload === awaited.probe) awaited.heard();
      });
      const probe = () =>
        new Promise<void>((resolve, reject) => {
          const silent = setTimeout(() => reject(new Error('the probe announcement was not heard back')), this.heartbeatMs);
          awaited = {
            probe: `probe:${schema}:${randomUUID()}`,
            heard: () => {
              clearTimeout(silent);
              awaited = undefined;
              resolve();
            },
          };
          client.query('SELECT pg_notify($1, $2)', [directoryChannel, awaited.probe]).catch(reject);
        });
      await client.query(`LISTEN ${directoryChannel}`);
      await probe();
      if (this.listener !== client) return;
      // What was cached before (nothing, or from before a break) may have missed announcements.
      this.invalidate();
      this.listening = true;
      this.retryMs = firstRetryMs;
      // The heartbeat is the same proof, again and again: a connection that stops hearing turns the cache off.
      this.heartbeat = setInterval(() => {
        if (awaited !== undefined) return down();
        probe().catch(down);
      }, this.heartbeatMs);
      this.heartbeat.unref();
    } catch {
      down();
    }
  }

  private down(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.listening = false;
    this.invalidate();
    clearInterval(this.heartbeat);
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.retry = setTimeout(() => void this.listen(), this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, maxRetryMs);
  }
}
