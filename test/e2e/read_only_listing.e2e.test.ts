/**
 * The listing commands only read, so they work on a database file they cannot write (a read-only
 * mount, a folder of another user's): no migration, no key file, nothing sealed. A database that
 * still needs migrations is refused in one line that says so, and left as it was. `keys list`
 * marks a signing key stored in the clear (written by an older build) instead of showing it as an
 * ordinary active key, in the table and in --json.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKey } from '../../src/crypto/keys.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { runCli } from '../helpers/process.js';

let root: string;
const releases: (() => void)[] = [];

/**
 * `folder` as a process may read but not write it: a read-only bind mount when this is root (to
 * whom file modes are no obstacle), else the folder and its files made read-only.
 */
function readOnlyView(folder: string, files: string[]): string {
  if (process.getuid?.() === 0) {
    const view = mkdtempSync(join(root, 'read-only-'));
    execFileSync('mount', ['--bind', folder, view]);
    releases.push(() => execFileSync('umount', [view]));
    execFileSync('mount', ['-o', 'remount,ro,bind', view]);
    return view;
  }
  for (const file of files) chmodSync(join(folder, file), 0o400);
  chmodSync(folder, 0o500);
  releases.push(() => chmodSync(folder, 0o700));
  return folder;
}

let clearKid: string;
let sealedKid: string;
let readOnlyDb: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'latchkey-read-only-'));
  const folder = join(root, 'data');
  mkdirSync(folder, { mode: 0o700 });
  const db = join(folder, 'latchkey.db');
  const env = { LATCHKEY_DB: db };
  const added = await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], env, 'erin-password');
  expect(added.code, added.stderr).toBe(0);
  const rotated = await runCli(['keys', 'rotate'], env);
  expect(rotated.code, rotated.stderr).toBe(0);
  sealedKid = rotated.stdout.trim().split('\n')[0]!;
  // What an older `latchkey keys rotate` does: a new active key, its private key as PEM.
  const store = new SqliteStore({ path: db });
  try {
    const key = generateSigningKey('RS256');
    clearKid = key.kid;
    await store.rotateSigningKeys([{ ...key, createdAt: Math.floor(Date.now() / 1000) + 1 }], Math.floor(Date.now() / 1000) + 1);
  } finally {
    await store.close();
  }
  readOnlyDb = join(readOnlyView(folder, ['latchkey.db', 'latchkey.db.key']), 'latchkey.db');
}, 30_000);

afterAll(() => {
  for (const release of releases.reverse()) release();
  rmSync(root, { recursive: true, force: true });
});

describe('listing commands on a database they cannot write', () => {
  it('users list and keys list read it, and keys list marks the key stored in the clear in the table and in --json', async () => {
    const env = { LATCHKEY_DB: readOnlyDb };
    const [users, keysJson, keysTable] = await Promise.all([
      runCli(['users', 'list', '--json'], env),
      runCli(['keys', 'list', '--json'], env),
      runCli(['keys', 'list'], env),
    ]);
    expect(users.code, users.stderr).toBe(0);
    expect(users.stderr).toBe('');
    expect((JSON.parse(users.stdout) as { username: string }[]).map((u) => u.username)).toEqual(['erin']);

    expect(keysJson.code, keysJson.stderr).toBe(0);
    const keys = JSON.parse(keysJson.stdout) as { kid: string; status: string; sealed: boolean }[];
    expect(keys.map((k) => ({ kid: k.kid, status: k.status, sealed: k.sealed }))).toEqual([
      { kid: clearKid, status: 'active', sealed: false },
      { kid: sealedKid, status: 'retired', sealed: true },
    ]);
    expect(keysJson.stderr).toContain(`latchkey: warning: ${clearKid}: the private key is stored in the clear`);
    expect(keysJson.stderr).toContain('run latchkey secret-key rotate');

    expect(keysTable.code, keysTable.stderr).toBe(0);
    const rows = keysTable.stdout.split('\n');
    expect(rows.find((r) => r.startsWith(clearKid))).toMatch(/\bactive, IN THE CLEAR\b/);
    expect(rows.find((r) => r.startsWith(sealedKid))).toMatch(/\bretired\b/);
    expect(rows.find((r) => r.startsWith(sealedKid))).not.toContain('IN THE CLEAR');
  });

  it('a database that needs migrations is refused in one line saying so, and a listing command leaves it as it was', async () => {
    const folder = join(root, 'behind');
    mkdirSync(folder, { mode: 0o700 });
    const db = join(folder, 'latchkey.db');
    copyFileSync(readOnlyDb, db);
    // As a build one migration older left it: the last migration not yet recorded.
    const handle = new Database(db);
    const latest = handle.prepare('SELECT max(version) AS v, name FROM schema_migrations').get() as { v: number; name: string };
    handle.prepare('DELETE FROM schema_migrations WHERE version = ?').run(latest.v);
    handle.close();

    const listed = await runCli(['users', 'list'], { LATCHKEY_DB: db });
    expect(listed.code).toBe(3);
    expect(listed.stderr).toBe(
      `latchkey: LATCHKEY_DB: cannot open the database ${db}: the database is at schema version ${latest.v - 1} and needs the migrations ${latest.name.replace(/\.sql$/, '')}; a command that only reads does not upgrade it: start the server on it, or run an admin command that changes something, where the file can be written (take a backup first)\n`,
    );
    const after = new Database(db, { readonly: true });
    expect(after.prepare('SELECT count(*) AS n FROM schema_migrations WHERE version = ?').get(latest.v)).toEqual({ n: 0 });
    after.close();
  });
});
