/**
 * The directory cache, as a wrapper around a store: clients (and the web origins registered for
 * them), users with their roles, APIs and connectors are read on nearly every request, and each read was a statement (on a device
 * authorization a third of the work). The server's store keeps them, frozen, in a RecordCache that
 * knows when another process changed them (SQLite: the directory_version its triggers bump;
 * PostgreSQL: the announcements its triggers NOTIFY); this process's own changes drop it at once,
 * by the verbs that declare they write the directory (verbs.ts), before they run and after they
 * end; so do the verbs after which reads must be fresh (taking a resource lease). Nothing here reads SQL.
 */
import type { ApiRecord, ClientRecord, ConnectorRecord, Store, UserRecord } from './store.js';
import { verbNames, verbTraits } from './verbs.js';

export interface RecordCache {
  /** A map of records for the cache to keep and drop; lookups go through lookup(). */
  map<T extends object>(): Map<string, T>;
  /** The record for `key`: cached, or loaded (and cached, frozen, when the cache may serve now). */
  lookup<T extends object>(map: Map<string, T>, key: string, load: () => Promise<T | undefined>): Promise<T | undefined>;
  /** Drops everything cached. */
  invalidate(): void;
}

/** Routes the store's directory lookups through `cache`, and its directory writes past it. Changes `store` itself. */
export function cacheDirectory<S extends Store>(store: S, cache: RecordCache): S {
  const clients = cache.map<ClientRecord>();
  const users = cache.map<UserRecord>();
  const apis = cache.map<ApiRecord>();
  const connectors = cache.map<ConnectorRecord[]>();
  const webOrigins = cache.map<string[]>();
  const findClient = store.findClient.bind(store);
  const findUserById = store.findUserById.bind(store);
  const findApi = store.findApi.bind(store);
  const listConnectors = store.listConnectors.bind(store);
  const listWebOrigins = store.listWebOrigins.bind(store);
  const listCached = async () => (await cache.lookup(connectors, 'all', listConnectors)) ?? [];
  const patched: Partial<Store> = {
    findClient: (clientId) => cache.lookup(clients, clientId, () => findClient(clientId)),
    findUserById: (id) => cache.lookup(users, id, () => findUserById(id)),
    findApi: (identifier) => cache.lookup(apis, identifier, () => findApi(identifier)),
    // A copy: the cached list itself is shared and frozen.
    listConnectors: async () => [...(await listCached())],
    findConnector: async (id) => (await listCached()).find((c) => c.id === id),
    // Every CORS preflight asks; one list, whatever origins the requests name.
    listWebOrigins: async () => [...((await cache.lookup(webOrigins, 'all', listWebOrigins)) ?? [])],
  };
  Object.assign(store, patched);
  const self = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  for (const name of verbNames) {
    if (verbTraits[name].directory !== true && verbTraits[name].freshReadsAfter !== true) continue;
    const verb = self[name]?.bind(store);
    if (verb === undefined) throw new Error(`the store has no verb ${name}`);
    // After as well as before: a lookup between the write and its commit read the old row.
    self[name] = (...args: unknown[]) => {
      cache.invalidate();
      return verb(...args).finally(() => cache.invalidate());
    };
  }
  return store;
}
