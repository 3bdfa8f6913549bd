/**
 * A server started with a configuration file keeps the POSIX locks SQLite takes on its database:
 * one store per process, the file opened by SQLite alone. Without those locks another process —
 * `sqlite3 DB ".backup …"` as docs/operating.md prescribes — believes itself the file's last user
 * when it closes, and checkpoints and deletes the live WAL under the server (sqlite.org, "How To
 * Corrupt An SQLite Database File", §2.2): what admin commands write afterwards goes to a new WAL
 * the server never reads, and the file ends malformed. The locks are read where the kernel keeps
 * them, /proc/locks, by the database file's inode and the server's pid.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, fetchTransport, signIn } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

/** The byte SQLite's shared lock starts at: PENDING_BYTE (0x40000000) + 2 (os_unix.c, SHARED_FIRST). */
const sharedFirst = 0x40000002;

interface HeldLock {
  pid: number;
  access: 'READ' | 'WRITE';
  start: number;
}

/** The POSIX locks held on `file` by `pid`, as /proc/locks lists them ("1: POSIX ADVISORY READ 123 08:01:4567 start end"). */
function locksOn(file: string, pid: number): HeldLock[] {
  const inode = statSync(file).ino;
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .map((line) => /^\d+:\s+(?:->\s+)?POSIX\s+\S+\s+(READ|WRITE)\s+(\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s+(\d+)\s+/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[3]) === inode && Number(m[2]) === pid)
    .map((m) => ({ pid: Number(m[2]), access: m[1] as 'READ' | 'WRITE', start: Number(m[4]) }));
}

function sqlite3(database: string, command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sqlite3', [database, command], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let folder: string;
let database: string;
let server: ServerProcess;
const env = () => ({ LATCHKEY_DB: database });

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'latchkey-locks-'));
  database = join(folder, 'latchkey.db');
  const configFile = join(folder, 'latchkey.yaml');
  writeFileSync(configFile, ['apis:', '  - identifier: https://reports.example', '    name: Reports', '    scopes: [read:reports]', ''].join('\n'));
  const added = await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], env(), 'erin-password');
  expect(added.code, added.stderr).toBe(0);
  server = await startServerProcess(env(), ['--config', configFile]);
  expect(server.output()).toContain('applied 1 change(s)');
}, 30_000);

afterAll(async () => {
  await server?.stop();
  rmSync(folder, { recursive: true, force: true });
});

describe('a server started with a configuration file, on SQLite', () => {
  it("holds SQLite's shared lock on the database file once it has applied the file and listens", () => {
    const held = locksOn(database, server.child.pid!);
    expect(
      held.some((lock) => lock.access === 'READ' && lock.start <= sharedFirst),
      JSON.stringify(held),
    ).toBe(true);
  });

  it('a backup taken with sqlite3 .backup while it runs leaves the WAL in place, and a revocation an admin command makes afterwards is seen', async () => {
    const browser = new Browser(fetchTransport(server.base));
    expect((await signIn(browser, await browser.get('/login?return_to=%2Faccount'), 'erin', 'erin-password')).status).toBe(303);
    expect((await browser.get('/account')).status).toBe(200);

    // The backup docs/operating.md prescribes, run while the server serves.
    const backup = join(folder, 'backup.db');
    const taken = await sqlite3(database, `.backup '${backup}'`);
    expect(taken.code, taken.stderr).toBe(0);
    expect(existsSync(`${database}-wal`)).toBe(true);
    expect(locksOn(database, server.child.pid!).length).toBeGreaterThan(0);

    // An operator ends the sign-in from another process on LATCHKEY_DB.
    const listed = await runCli(['sessions', 'list', '--user', 'erin', '--json'], env());
    expect(listed.code, listed.stderr).toBe(0);
    const session = (JSON.parse(listed.stdout) as { id: string; kind: string }[]).find((row) => row.kind === 'browser');
    expect(session).toBeDefined();
    const revoked = await runCli(['sessions', 'revoke', session!.id], env());
    expect(revoked.code, revoked.stderr).toBe(0);

    // The server reads the same WAL the command wrote to: the revoked sign-in is refused.
    expect((await browser.get('/account')).status).toBe(303);
    const checked = await sqlite3(database, 'PRAGMA integrity_check');
    expect(checked.stdout.trim(), checked.stderr).toBe('ok');
    expect((await sqlite3(backup, 'PRAGMA integrity_check')).stdout.trim()).toBe('ok');
  });
});
