/**
 * Running it for real. No Docker engine runs here, so the Dockerfile is checked by reading it,
 * and the exact start and health-check commands it declares are run against its environment.
 * Then graceful shutdown: requests in flight at SIGTERM complete.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');

/** The JSON-array form of an instruction, e.g. CMD ["node", "dist/cli/main.js", "serve"]. */
function execForm(instruction: string): string[] {
  const match = dockerfile.match(new RegExp(`^${instruction}[^\\n]*?(\\[.*\\])\\s*$`, 'm'));
  if (!match) throw new Error(`no ${instruction} in the Dockerfile`);
  return JSON.parse(match[1]!) as string[];
}

function dockerEnv(): Record<string, string> {
  const block = dockerfile.match(/^ENV ([\s\S]*?)\n(?!\s)/m)![1]!;
  return Object.fromEntries(
    block
      .split(/\\\n|\s+(?=[A-Z_]+=)/)
      .map((p) => p.trim())
      .filter(Boolean)
      .map((p) => p.split('=') as [string, string]),
  );
}

function run(command: string[], env: Record<string, string>) {
  const child = spawn(command[0]!, command.slice(1), { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer | string) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer | string) => (output += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exit, output: () => output };
}

describe('the container image', () => {
  it('is multi-stage, runs as a non-root user with the database on a volume, and has a health check', () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^VOLUME \["\/data"\]$/m);
    expect(dockerEnv()).toMatchObject({ HOST: '0.0.0.0', LATCHKEY_DB: '/data/latchkey.db', NODE_ENV: 'production' });
    expect(execForm('CMD')).toEqual(['node', 'dist/cli/main.js', 'serve']);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\\\n\s+CMD \[/m);
  });

  it('copies and builds no benchmark code: the bench lives outside every folder the image copies, and the build context leaves it out', () => {
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) => match[1]!.trim().split(/\s+/));
    expect(copied).toContain('src');
    for (const source of copied) expect({ source, bench: source === 'bench' || existsSync(join(root, source, 'bench')) }).toEqual({ source, bench: false });
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    expect(ignored).toEqual(expect.arrayContaining(['bench', 'dist-bench']));
  });

  it("its CMD serves on 0.0.0.0 with the image's environment, and its HEALTHCHECK passes, then fails once stopped", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-image-'));
    const port = String(await freePort());
    // The mounted secret's place (/run/secrets) stands in a folder of the test's own.
    const env = {
      ...dockerEnv(),
      PORT: port,
      LATCHKEY_DB: join(dir, 'data', 'latchkey.db'),
      LATCHKEY_SECRET_KEY_FILE: join(dir, 'secrets', 'latchkey_secret_key'),
      LATCHKEY_ISSUER: `http://127.0.0.1:${port}`,
    };
    const server = run(execForm('CMD'), env);
    try {
      await waitFor(() => server.output().includes('Latchkey is listening'), { what: 'the server to listen' });
      expect(server.output()).toContain(`Latchkey is listening on http://0.0.0.0:${port}`);
      // Not a terminal: the start is said in JSON log lines, and the generated password is not in any.
      expect(server.output()).toContain('"event":"startup.first_user"');
      expect(server.output()).not.toMatch(/password: [A-Za-z0-9]{20}/);
      expect(server.output()).not.toContain('Next, in another terminal:');
      const healthcheck = execForm('  CMD');
      expect(await run(healthcheck, { PORT: port }).exit).toBe(0);
    } finally {
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    }
    expect(await run(execForm('  CMD'), { PORT: port }).exit).toBe(1);
    rmSync(dir, { recursive: true, force: true });
  });

  it('without the key mounted where the image expects it, its CMD stops with one line saying how to provide it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-image-'));
    // The folder the key should be in cannot be made (as /run/secrets for the image's user): a file is in the way.
    writeFileSync(join(dir, 'secrets'), '');
    const missing = join(dir, 'secrets', 'latchkey_secret_key');
    const env = { ...dockerEnv(), PORT: String(await freePort()), LATCHKEY_DB: join(dir, 'data', 'latchkey.db'), LATCHKEY_SECRET_KEY_FILE: missing };
    const server = run(execForm('CMD'), env);
    expect(await server.exit).toBe(3);
    const lines = server.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^latchkey: LATCHKEY_SECRET_KEY: the secret key file ${missing} does not exist and cannot be created \\(.+\\): mount the key file there, or set LATCHKEY_SECRET_KEY \\(make one with: latchkey secret-key generate\\)$`,
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  });
});

/**
 * Whether the server has accepted at least `count` connections on `port` and read everything sent
 * on them (Linux's /proc/net/tcp: established sockets on that local port, their receive queues
 * empty): what must hold before SIGTERM for their requests to be in flight rather than unsent.
 */
function serverHasRead(port: number, count: number): boolean {
  const localPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const established = readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1]?.endsWith(localPort) && fields[3] === '01');
  return established.length >= count && established.every((fields) => fields[4]?.split(':')[1] === '00000000');
}

describe('graceful shutdown', () => {
  it('a client that never finishes its request cannot hold the shutdown past LATCHKEY_SHUTDOWN_TIMEOUT', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-slow-'));
    const port = await freePort();
    const server = run(['node', 'dist/cli/main.js', 'serve'], { LATCHKEY_DB: join(dir, 'latchkey.db'), PORT: String(port), LATCHKEY_SHUTDOWN_TIMEOUT: '1' });
    try {
      await waitFor(() => server.output().includes('Latchkey is listening'), { what: 'the server to listen' });
      const { connect } = await import('node:net');
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      socket.write('POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=');
      socket.on('error', () => undefined);
      await waitFor(() => serverHasRead(port, 1), { what: 'the server to read the unfinished request' });
      const started = Date.now();
      server.child.kill('SIGTERM');
      expect(await server.exit).toBe(0);
      expect(Date.now() - started).toBeLessThan(4000);
      socket.destroy();
    } finally {
      server.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('requests in flight at SIGTERM complete; the process then exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-shutdown-'));
    const port = await freePort();
    const env = {
      LATCHKEY_DB: join(dir, 'latchkey.db'),
      PORT: String(port),
      LATCHKEY_ISSUER: `http://127.0.0.1:${port}`,
      LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: 'off',
      LATCHKEY_RATE_LIMIT_SIGNIN_ADDRESS: 'off',
    };
    expect((await runCli(['users', 'add', 'fay', '--email', 'fay@example.com', '--password-stdin'], env, 'fay-password')).code).toBe(0);
    const server = run(['node', 'dist/cli/main.js', 'serve'], env);
    try {
      await waitFor(() => server.output().includes('Latchkey is listening'), { what: 'the server to listen' });
      const base = `http://127.0.0.1:${port}`;
      const page = await fetch(`${base}/login`);
      const cookie = page.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const csrf = (await page.text()).match(/name="csrf_token" value="([^"]+)"/)![1]!;
      // Sign-ins are slow on purpose (a password hash each, one per core at a time): eight of them
      // are still running when SIGTERM comes.
      // SIGTERM waits until every request has been written out whole and read by the server (on a
      // busy machine a fixed pause could come before some were even sent: those would rightly be
      // refused with 503).
      const body = new URLSearchParams({ csrf_token: csrf, username: 'fay', password: 'fay-password' }).toString();
      const sent: Promise<void>[] = [];
      const inFlight = Array.from({ length: 8 }, () => {
        let written!: () => void;
        sent.push(new Promise<void>((resolve) => (written = resolve)));
        return new Promise<number | string>((resolve) => {
          const request = httpRequest(
            `${base}/login`,
            { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          );
          request.on('error', (err) => resolve(`failed: ${err.message}`));
          request.on('finish', written);
          request.end(body);
        });
      });
      await Promise.all(sent);
      await waitFor(() => serverHasRead(port, 8), { what: 'the server to read the eight sign-ins' });
      server.child.kill('SIGTERM');
      expect(await Promise.all(inFlight)).toEqual(Array.from({ length: 8 }, () => 303));
      expect(await server.exit).toBe(0);
    } finally {
      server.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
