/**
 * What the server's SQLite store does beyond the Store contract (src/store/sqlite): group commit,
 * the cache of clients/users/APIs kept honest by directory_version, and background checkpoints.
 * Each test looks from a second connection, as the admin CLI or another worker would.
 */
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOnlyVerbs, SqliteStore, writeVerbs } from '../../src/store/sqlite/sqlite_store.js';
import { DuplicateError } from '../../src/store/store.js';
import { client, deviceGrant, t0, user } from '../helpers/records.js';
import { waitFor } from '../helpers/wait.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-server-store-'));
  dirs.push(dir);
  return join(dir, 'latchkey.db');
}

function serverStore(path: string): SqliteStore {
  return new SqliteStore({ path, now: t0, groupCommit: true, backgroundCheckpoints: true });
}

/**
 * Runs `work` on the server's store and a second connection to the same file (as the admin CLI's),
 * with alice and the cli client created through the server's; then closes both.
 */
async function withServerAndCli(work: (server: SqliteStore, cli: SqliteStore) => Promise<void>): Promise<void> {
  const path = tempPath();
  const server = serverStore(path);
  const cli = new SqliteStore({ path, now: t0 });
  try {
    await server.createUser(user());
    await server.createClient(client());
    await work(server, cli);
  } finally {
    await cli.close();
    await server.close();
  }
}

describe('group commit', () => {
  it('writes of one turn share one commit, and each promise settles only once the commit is visible to other connections', async () => {
    const path = tempPath();
    const store = serverStore(path);
    const other = new Database(path, { readonly: true });
    try {
      await store.createUser(user());
      await store.createClient(client());
      const count = () => (other.prepare('SELECT count(*) AS n FROM device_grants').get() as { n: number }).n;
      const writes = Array.from({ length: 20 }, (_, i) =>
        store.createDeviceGrant(deviceGrant({ id: `g-${i}`, deviceCodeHash: `dc-${i}`, userCodeHash: `uc-${i}` })).then(() => count()),
      );
      // Nothing is written before the turn ends.
      expect(count()).toBe(0);
      const seenWhenSettled = await Promise.all(writes);
      // Every write saw all twenty: they were committed together, before any promise settled.
      expect(seenWhenSettled).toEqual(Array.from({ length: 20 }, () => 20));
    } finally {
      other.close();
      await store.close();
    }
  });

  it('a write that fails (a duplicate) fails alone; the rest of its batch is committed', async () => {
    const path = tempPath();
    const store = serverStore(path);
    try {
      await store.createUser(user());
      await store.createClient(client());
      const results = await Promise.allSettled([
        store.createDeviceGrant(deviceGrant({ id: 'a', deviceCodeHash: 'dc-a', userCodeHash: 'uc-a' })),
        store.createDeviceGrant(deviceGrant({ id: 'b', deviceCodeHash: 'dc-b', userCodeHash: 'uc-a' })),
        store.createDeviceGrant(deviceGrant({ id: 'c', deviceCodeHash: 'dc-c', userCodeHash: 'uc-c' })),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(DuplicateError);
      expect((await store.findDeviceGrantByDeviceCode('dc-a'))?.id).toBe('a');
      expect(await store.findDeviceGrantByDeviceCode('dc-b')).toBeUndefined();
      expect((await store.findDeviceGrantByDeviceCode('dc-c'))?.id).toBe('c');
    } finally {
      await store.close();
    }
  });

  it('of many simultaneous redemptions of one approved code in one batch, exactly one wins', async () => {
    const path = tempPath();
    const store = serverStore(path);
    try {
      await store.createUser(user());
      await store.createClient(client());
      await store.createDeviceGrant(deviceGrant({ id: 'g', status: 'approved', userId: user().id, decidedAt: t0 + 1 }));
      const results = await Promise.all(Array.from({ length: 10 }, () => store.consumeDeviceGrant('g', t0 + 2)));
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('close() commits what is still queued', async () => {
    const path = tempPath();
    const store = serverStore(path);
    await store.createUser(user());
    const pending = store.createClient(client({ clientId: 'late' }));
    await store.close();
    await pending;
    const reopened = new SqliteStore({ path, now: t0 });
    try {
      expect((await reopened.findClient('late'))?.clientId).toBe('late');
    } finally {
      await reopened.close();
    }
  });
});

describe('the verbs that join a batch', () => {
  it('every verb of the store is either a read or a write, never both or neither (but closing and scrubbing, which run outside batches)', () => {
    const verbs = new Set<string>();
    for (let proto = SqliteStore.prototype as object; proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const member = (proto as Record<string, unknown>)[name];
        if (typeof member === 'function' && member.constructor.name === 'AsyncFunction' && name !== 'close' && name !== 'scrubFreedSpace') verbs.add(name);
      }
    }
    for (const verb of verbs) expect({ verb, read: readOnlyVerbs.has(verb), write: writeVerbs.has(verb) }).toMatchObject({ read: !writeVerbs.has(verb) });
    for (const verb of verbs) expect({ verb, classified: readOnlyVerbs.has(verb) || writeVerbs.has(verb) }).toEqual({ verb, classified: true });
    expect([...readOnlyVerbs, ...writeVerbs].sort()).toEqual([...verbs].sort());
  });

  it('a write verb does all its SQL at once: inside a transaction it leaves nothing for later', async () => {
    const path = tempPath();
    const store = new SqliteStore({ path, now: t0 });
    try {
      await store.createUser(user());
      await store.createClient(client());
      // bulk() commits when its callback returns: a verb that awaited before its SQL would miss it.
      let pending: Promise<unknown> | undefined;
      store.bulk(() => {
        pending = store.createDeviceGrant(deviceGrant());
      });
      const reader = new Database(path, { readonly: true });
      expect((reader.prepare('SELECT count(*) AS n FROM device_grants').get() as { n: number }).n).toBe(1);
      reader.close();
      await pending;
    } finally {
      await store.close();
    }
  });
});

describe('reads in the batch', () => {
  it("a turn's reads run with its writes, in call order, in one transaction at the end of the turn", async () => {
    const path = tempPath();
    const server = serverStore(path);
    try {
      await server.createUser(user());
      // Called in one turn: the read comes after the write and sees it; the one before does not.
      const before = server.findClient(client().clientId);
      const created = server.createClient(client());
      const after = server.findClient(client().clientId);
      expect(await before).toBeUndefined();
      await created;
      expect((await after)?.clientId).toBe(client().clientId);
    } finally {
      await server.close();
    }
  });

  it('a read still sees what another process committed earlier in the same turn', async () => {
    await withServerAndCli(async (server, cli) => {
      expect((await server.findClient(client().clientId))?.clientId).toBe(client().clientId);
      const read = (async () => {
        await cli.removeClient(client().clientId, t0);
        return server.findClient(client().clientId);
      })();
      expect(await read).toBeUndefined();
    });
  });
});

describe('a batch that SQLite rolls back whole', () => {
  it('fails every verb of it, commits none of them, and the cache forgets what its reads saw', async () => {
    await withServerAndCli(async (server, cli) => {
      await server.createRole({ name: 'ops', description: undefined, permissions: [], createdAt: t0 });
      // A trigger that rolls back the whole transaction: what an I/O error would do mid-batch.
      server.db.exec(`CREATE TEMP TRIGGER lose_the_batch BEFORE INSERT ON device_grants WHEN NEW.device_code_hash = 'boom'
        BEGIN SELECT RAISE(ROLLBACK, 'the batch is lost'); END`);
      const granted = server.grantRole('user-alice', 'ops', t0);
      const seen = server.findUserById('user-alice');
      const lost = server.createDeviceGrant(deviceGrant({ id: 'boom', deviceCodeHash: 'boom', userCodeHash: 'boom-user' }));
      const after = server.createDeviceGrant(deviceGrant({ id: 'after', deviceCodeHash: 'dc-after', userCodeHash: 'uc-after' }));
      const outcomes = await Promise.allSettled([granted, seen, lost, after]);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      expect(await cli.findDeviceGrantByDeviceCode('dc-after')).toBeUndefined();
      expect((await cli.findUserById('user-alice'))?.roles).toEqual([]);
      // Another process's change brings the directory version back to the number the lost batch
      // had reached: the server must not serve the role that was never committed.
      await cli.createApi({ identifier: 'https://api.example.com', name: 'API', createdAt: t0, introspectionClients: [], scopes: [] });
      expect((await server.findUserById('user-alice'))?.roles).toEqual([]);
    });
  });
});

describe('reads out of the batch (several worker processes)', () => {
  it('run at once, as without group commit', async () => {
    const store = new SqliteStore({ path: tempPath(), now: t0, groupCommit: true, batchReads: false });
    try {
      await store.createUser(user());
      const created = store.createClient(client());
      const read = store.findClient(client().clientId);
      expect(await read).toBeUndefined();
      await created;
      expect((await store.findClient(client().clientId))?.clientId).toBe(client().clientId);
    } finally {
      await store.close();
    }
  });
});

describe('the directory cache', () => {
  it('sees a client removed, a user disabled and an API added by another process at once', async () => {
    await withServerAndCli(async (server, cli) => {
      expect((await server.findClient(client().clientId))?.clientId).toBe(client().clientId);
      expect((await server.findUserById(user().id))?.disabled).toBe(false);
      expect(await server.findApi('https://api.example.com')).toBeUndefined();

      await cli.removeClient(client().clientId, t0);
      await cli.setUserDisabled(user().username, true, t0);
      await cli.createApi({ identifier: 'https://api.example.com', name: 'API', createdAt: t0, introspectionClients: [], scopes: [] });

      expect(await server.findClient(client().clientId)).toBeUndefined();
      expect((await server.findUserById(user().id))?.disabled).toBe(true);
      expect((await server.findApi('https://api.example.com'))?.name).toBe('API');
    });
  });

  it('hands out records nobody can change', async () => {
    const store = serverStore(tempPath());
    try {
      await store.createClient(client());
      const found = await store.findClient(client().clientId);
      expect(Object.isFrozen(found)).toBe(true);
      expect(() => found?.redirectUris.push('https://evil.example')).toThrow();
      expect((await store.findClient(client().clientId))?.redirectUris).toEqual(client().redirectUris);
    } finally {
      await store.close();
    }
  });
});

describe('background checkpoints', () => {
  it('keep the WAL from growing while the server writes, and leave it empty on close', async () => {
    const path = tempPath();
    const store = serverStore(path);
    await store.createUser(user());
    await store.createClient(client());
    for (let round = 0; round < 20; round++) {
      await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          store.createDeviceGrant(deviceGrant({ id: `g-${round}-${i}`, deviceCodeHash: `dc-${round}-${i}`, userCodeHash: `uc-${round}-${i}` })),
        ),
      );
    }
    // Automatic checkpoints are off on this connection: only the worker thread copies the WAL back
    // into the database file, which therefore grows to hold the 4,000 rows without any commit doing it.
    await waitFor(() => statSync(path).size > 1_000_000, { what: 'the checkpoints to grow the database file past 1 MB' });
    await store.close();
    expect(statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
  });
});
