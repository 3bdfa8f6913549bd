/**
 * LATCHKEY_WORKERS=2, run as an operator would: one primary and two worker processes on one port
 * and one SQLite file. A person approves in a browser whose requests land on either worker, the
 * device redeems its code once however many workers it races through, /metrics counts the whole
 * cluster, a killed worker is replaced, and SIGTERM stops everything cleanly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let env: Record<string, string>;
let server: ServerProcess;

function workerPids(): number[] {
  const pid = server.child.pid ?? 0;
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** One request on a connection of its own, so the primary hands each to the next worker. */
function freshConnection(method: string, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, server.base);
    const req = request(url, { method, agent: false, headers: body ? { 'content-type': 'application/x-www-form-urlencoded' } : {} }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer | string) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-cluster-'));
  env = { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_WORKERS: '2', LATCHKEY_SIGNING_ALG: 'ES256', LATCHKEY_LOG_LEVEL: 'info' };
  const add = await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], env, 'erin-password\n');
  expect(add.code).toBe(0);
  server = await startServerProcess(env);
  await waitFor(() => workerPids().length === 2 && server.output().split('Server listening').length - 1 === 2, { what: 'two listening workers' });
}, 30_000);

afterAll(async () => {
  await server?.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// Worker pids are read from /proc.
describe.runIf(process.platform === 'linux')('LATCHKEY_WORKERS=2', () => {
  it('prints the banner once, naming the workers', () => {
    expect(server.output().match(/Latchkey is listening/g)).toHaveLength(1);
    expect(server.output()).toContain('2 worker processes');
  });

  it('both workers answer, and /metrics counts the requests of the whole cluster', async () => {
    for (let i = 0; i < 12; i++) expect((await freshConnection('GET', '/healthz')).status).toBe(200);
    const pids = new Set(
      server
        .output()
        .split('\n')
        .filter((line) => line.includes('"url":"/healthz"'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    );
    expect(pids.size).toBe(2);
    const metrics = await freshConnection('GET', '/metrics');
    expect(metrics.status).toBe(200);
    const counted = metrics.body
      .split('\n')
      .filter((line) => line.startsWith('latchkey_http_requests_total{') && line.includes('route="/healthz"'))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
    expect(counted).toBe(12);
  });

  it('a device flow approved through pages served by either worker; racing redemptions yield one token response', async () => {
    const device = JSON.parse((await freshConnection('POST', '/oauth/device/code', 'client_id=latchkey-cli&scope=openid%20offline_access')).body);
    const pending = await freshConnection(
      'POST',
      '/oauth/token',
      new URLSearchParams({ grant_type: deviceGrantType, device_code: device.device_code, client_id: 'latchkey-cli' }).toString(),
    );
    expect(JSON.parse(pending.body).error).toBe('authorization_pending');

    const browser = new Browser(fetchTransport(server.base));
    const result = await actOnDeviceCode(browser, `/activate?user_code=${device.user_code}`, { username: 'erin', password: 'erin-password' }, 'allow');
    expect(result.status).toBe(200);
    // Twelve simultaneous redemptions on their own connections, at once: an approved grant is handed
    // out even to a poll sooner than the interval (slow_down is for pending ones, RFC 8628 §3.5).
    const body = new URLSearchParams({ grant_type: deviceGrantType, device_code: device.device_code, client_id: 'latchkey-cli' }).toString();
    const answers = await Promise.all(Array.from({ length: 12 }, () => freshConnection('POST', '/oauth/token', body)));
    const issued = answers.filter((a) => a.status === 200);
    expect(issued).toHaveLength(1);
    for (const other of answers.filter((a) => a.status !== 200)) expect(['invalid_grant', 'slow_down']).toContain(JSON.parse(other.body).error);

    const tokens = JSON.parse(issued[0]?.body ?? '{}');
    expect(decodeProtectedHeader(tokens.access_token).alg).toBe('ES256');
    const jwks = JSON.parse((await freshConnection('GET', '/.well-known/jwks.json')).body) as JSONWebKeySet;
    // One set of keys for the whole cluster: the primary made them before forking.
    expect(jwks.keys.map((k) => k.alg).sort()).toEqual(['ES256', 'RS256']);
    await jwtVerify(tokens.access_token, createLocalJWKSet(jwks), { algorithms: ['ES256'] });
  }, 30_000);

  it('a worker that dies is replaced, and both answer again', async () => {
    const [victim, survivor] = workerPids();
    process.kill(victim ?? 0, 'SIGKILL');
    const replaced = await waitFor(
      () => {
        const pids = workerPids();
        return pids.length === 2 && !pids.includes(victim ?? 0) && pids;
      },
      { what: 'a replacement worker' },
    );
    expect(replaced).toContain(survivor);
    expect(server.output()).toContain('worker exited; starting another');
    await waitFor(() => server.output().split('Server listening').length - 1 >= 3, { what: 'the replacement to listen' });
    for (let i = 0; i < 6; i++) expect((await freshConnection('GET', '/healthz')).status).toBe(200);
  });

  it('a worker that cannot start (its port is taken) ends the whole server with an error, not a restart loop', async () => {
    const second = startServerProcess({ ...env, PORT: new URL(server.base).port });
    await expect(second).rejects.toThrow(/exited with 1/);
    await expect(second).rejects.toThrow(/a worker process could not start/);
  });

  it('SIGTERM stops the workers and the primary cleanly', async () => {
    const pids = workerPids();
    expect(await server.stop('SIGTERM')).toBe(0);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });
});
