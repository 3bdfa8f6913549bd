/**
 * The PostgreSQL directory cache's own rules (store/postgres/directory_cache.ts), with a stand-in
 * for the listening connection; the real one runs in test/store/postgres_conformance.test.ts.
 */
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { directoryChannel, DirectoryCache } from '../../src/store/postgres/directory_cache.js';
import { waitFor } from '../helpers/wait.js';

/** A listening connection; announcements made elsewhere reach it unless it is `deaf`. */
class FakeListener extends EventEmitter {
  queries: string[] = [];
  constructor(public deaf: boolean) {
    super();
  }
  async connect(): Promise<void> {}
  async end(): Promise<void> {}
  async query(text: string): Promise<unknown> {
    this.queries.push(text);
    return { rows: [] };
  }
  /** What another session's pg_notify does. */
  announce(payload: string): void {
    if (!this.deaf) this.emit('notification', { channel: directoryChannel, payload, processId: 2 });
  }
}

const caches: DirectoryCache[] = [];
afterEach(async () => {
  for (const cache of caches.splice(0)) await cache.stop();
});

async function started(deaf = false): Promise<{ cache: DirectoryCache; listener: FakeListener }> {
  const listener = new FakeListener(deaf);
  const cache = new DirectoryCache({
    connect: () => listener as unknown as pg.Client,
    schema: async () => 'public',
    // The probe goes out through another connection (the store's pool) and comes back to the listener.
    announce: async (payload) => void setImmediate(() => listener.announce(payload)),
    heartbeatMs: 200,
  });
  caches.push(cache);
  await cache.start();
  return { cache, listener };
}

describe('DirectoryCache', () => {
  it('caches once it has heard its own probe back, and drops everything when a change to its schema is announced', async () => {
    const { cache, listener } = await started();
    expect(cache.active).toBe(true);
    expect(listener.queries).toContain(`LISTEN ${directoryChannel}`);
    const clients = cache.map<{ id: string }>();
    let loads = 0;
    const load = async () => ({ id: `load-${++loads}` });
    const first = await cache.lookup(clients, 'cli', load);
    expect(await cache.lookup(clients, 'cli', load)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    listener.announce('another_schema');
    expect(await cache.lookup(clients, 'cli', load)).toBe(first);
    listener.announce('public');
    expect(await cache.lookup(clients, 'cli', load)).toEqual({ id: 'load-2' });
  });

  it('a connection that cannot hear announcements made elsewhere (a pooler in transaction mode) never turns caching on', async () => {
    const { cache } = await started(true);
    expect(cache.active).toBe(false);
    const clients = cache.map<{ id: string }>();
    let loads = 0;
    const load = async () => ({ id: `load-${++loads}` });
    await cache.lookup(clients, 'cli', load);
    await cache.lookup(clients, 'cli', load);
    expect(loads).toBe(2);
  });

  it('does not keep what a lookup read while a change was announced', async () => {
    const { cache, listener } = await started();
    const clients = cache.map<{ id: string }>();
    let release!: () => void;
    const slow = cache.lookup(clients, 'cli', () => new Promise<{ id: string }>((resolve) => (release = () => resolve({ id: 'old' }))));
    listener.announce('public');
    release();
    expect(await slow).toEqual({ id: 'old' });
    expect(await cache.lookup(clients, 'cli', async () => ({ id: 'new' }))).toEqual({ id: 'new' });
  });

  it('stops serving cached records as soon as its probes are no longer heard, even before the connection is known to be broken', async () => {
    const { cache, listener } = await started();
    const clients = cache.map<{ id: string }>();
    await cache.lookup(clients, 'cli', async () => ({ id: 'cached' }));
    expect(await cache.lookup(clients, 'cli', async () => ({ id: 'fresh' }))).toEqual({ id: 'cached' });
    // The network silently drops everything: no error, no end, just silence.
    listener.deaf = true;
    await waitFor(() => !cache.active, { what: 'the cache to notice its probes are no longer heard' });
    expect(await cache.lookup(clients, 'cli', async () => ({ id: 'fresh' }))).toEqual({ id: 'fresh' });
  });

  it('caches no misses, and stops caching when its connection ends', async () => {
    const { cache, listener } = await started();
    const clients = cache.map<{ id: string }>();
    let loads = 0;
    expect(await cache.lookup(clients, 'nobody', async () => (loads++, undefined))).toBeUndefined();
    expect(await cache.lookup(clients, 'nobody', async () => (loads++, undefined))).toBeUndefined();
    expect(loads).toBe(2);
    listener.emit('end');
    expect(cache.active).toBe(false);
  });
});
