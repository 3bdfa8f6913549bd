/**
 * Runs the Store conformance suite (test/store/conformance.ts) against SQLite, in memory and on a
 * real file, then checks what only SQLite has: the migration runner and the connection pragmas.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { readMigrations } from '../../src/store/sqlite/migrate.js';
import { migrationsDir } from '../../src/paths.js';
import { storeConformance, t0, user } from './conformance.js';

// ─── Implementations ────────────────────────────────────────────────────────────────────────

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function tempDbPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'latchkey-store-'));
  tempDirs.push(dir);
  return join(dir, 'latchkey.db');
}

storeConformance('SQLite :memory:', async () => new SqliteStore({ path: ':memory:', now: t0 }));
storeConformance('SQLite file', async () => new SqliteStore({ path: tempDbPath(), now: t0 }));
storeConformance(
  'SQLite file as the server opens it (group commit, background checkpoints)',
  async () => new SqliteStore({ path: tempDbPath(), now: t0, groupCommit: true, backgroundCheckpoints: true }),
);

describe('SqliteStore specifics', () => {
  const migrationNames = readMigrations(migrationsDir).map((m) => m.name);

  it('the migrations folder starts with 0001_init.sql', () => {
    expect(migrationNames[0]).toBe('0001_init.sql');
  });

  it('records every applied migration in schema_migrations', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      expect(store.appliedMigrations).toEqual(migrationNames);
      const rows = store.db.prepare('SELECT version, name, applied_at FROM schema_migrations ORDER BY version').all();
      expect(rows).toEqual(migrationNames.map((name) => ({ version: Number(name.slice(0, 4)), name, applied_at: t0 })));
    } finally {
      await store.close();
    }
  });

  it('reopening the same file applies nothing again and keeps the data', async () => {
    const path = tempDbPath();
    const first = new SqliteStore({ path, now: t0 });
    try {
      expect(first.appliedMigrations).toEqual(migrationNames);
      await first.createUser(user());
    } finally {
      await first.close();
    }
    const second = new SqliteStore({ path, now: t0 + 100 });
    try {
      expect(second.appliedMigrations).toEqual([]);
      expect(await second.findUserByUsername('alice')).toEqual(user());
      const appliedAt = second.db.prepare('SELECT DISTINCT applied_at FROM schema_migrations').all();
      expect(appliedAt).toEqual([{ applied_at: t0 }]);
    } finally {
      await second.close();
    }
  });

  it('a file store runs in WAL mode with foreign keys on', async () => {
    const store = new SqliteStore({ path: tempDbPath(), now: t0 });
    try {
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(5000);
    } finally {
      await store.close();
    }
  });

  it('a :memory: store has foreign keys on', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    try {
      expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('creates missing parent folders for a file store', async () => {
    const path = join(tempDbPath().replace(/latchkey\.db$/, ''), 'nested', 'deeper', 'db.sqlite');
    const store = new SqliteStore({ path, now: t0 });
    try {
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('close() twice is harmless', async () => {
    const store = new SqliteStore({ path: ':memory:', now: t0 });
    await store.close();
    await expect(store.close()).resolves.toBeUndefined();
  });
});

describe('SqliteStore file permissions', () => {
  it('creates the folder 0700 and the database, WAL and shared-memory files 0600 (they hold the signing keys)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-perm-'));
    tempDirs.push(dir);
    const path = join(dir, 'nested', 'latchkey.db');
    const store = new SqliteStore({ path, now: t0 });
    try {
      await store.createUser(user());
      expect(statSync(join(dir, 'nested')).mode & 0o777).toBe(0o700);
      for (const file of [path, `${path}-wal`, `${path}-shm`]) expect(statSync(file).mode & 0o777).toBe(0o600);
    } finally {
      await store.close();
    }
  });
});
