/**
 * `latchkey sessions list | revoke` as an operator runs them: a real `latchkey serve`
 * on a SQLite file, a browser sign-in and a device signed in with `latchkey login --device`, then
 * the administration commands on the same database while the server runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport, signIn } from '../helpers/browser.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let cliEnv: Record<string, string>;
const password = 'erin-password';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-sessions-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  expect((await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], serverEnv, password)).code).toBe(0);
  expect((await runCli(['users', 'add', 'frank', '--email', 'frank@example.com', '--password-stdin'], serverEnv, 'frank-password')).code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
  cliEnv = { HOME: join(dir, 'home'), LATCHKEY_ISSUER: server.base };
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Row {
  id: string;
  kind: 'browser' | 'app';
  user: string;
  client_id: string | null;
  from: string | null;
  device: string;
  software: string | null;
  created_at: string;
  last_used_at: string;
}

describe('latchkey sessions', () => {
  it('lists a browser sign-in and a device, per user or all; revoking the device makes its next refresh fail', async () => {
    const browser = new Browser(fetchTransport(server.base), 'Mozilla/5.0 (test browser for sessions)');
    expect((await signIn(browser, await browser.get('/login?return_to=%2Faccount'), 'erin', password)).status).toBe(303);
    const frank = new Browser(fetchTransport(server.base));
    expect((await signIn(frank, await frank.get('/login'), 'frank', 'frank-password')).status).toBe(303);
    const cli = spawnCli(['login', '--device', '--profile', 'box'], cliEnv);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username: 'erin', password }, 'allow');
    expect(await cli.exit).toBe(0);

    const listed = await runCli(['sessions', 'list', '--user', 'erin', '--json'], serverEnv);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout) as Row[];
    expect(rows.every((r) => r.user === 'erin')).toBe(true);
    const device = rows.find((r) => r.kind === 'app')!;
    expect(device).toMatchObject({ client_id: 'latchkey-cli', from: '127.0.0.1' });
    expect(device.software).toBeTruthy(); // the device's own request, as the confirmation page showed it
    // Named as the pages name it: our own CLI's User-Agent is latchkey/<version> (<OS>; <arch>).
    expect(device.device).toMatch(/^latchkey \d+\.\d+ on (Linux|macOS|Windows)$/);
    expect(rows.some((r) => r.kind === 'browser' && r.software === 'Mozilla/5.0 (test browser for sessions)')).toBe(true);
    const everyone = JSON.parse((await runCli(['sessions', 'list', '--json'], serverEnv)).stdout) as Row[];
    expect(new Set(everyone.map((r) => r.user))).toEqual(new Set(['erin', 'frank']));
    const table = await runCli(['sessions', 'list'], serverEnv);
    expect(table.stdout).toMatch(/latchkey \d+\.\d+ on /);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+KIND\s+USER\s+CLIENT\s+DEVICE\s+FROM\s+CREATED\s+LAST USED/);

    // The device: ended, audited; its next refresh fails, so `latchkey token` must sign in again.
    const revoked = await runCli(['sessions', 'revoke', device.id], serverEnv);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stderr).toContain('Ended the sign-in of latchkey-cli');
    expect(JSON.parse(revoked.stderr.split('\n').find((l) => l.includes('session.revoked'))!)).toMatchObject({
      event: 'session.revoked',
      kind: 'app',
      clientId: 'latchkey-cli',
    });
    const whoami = await runCli(['whoami', '--profile', 'box'], cliEnv);
    expect(whoami.code).not.toBe(0);

    // A browser session: signed out at its next request.
    const session = rows.find((r) => r.kind === 'browser' && r.software === 'Mozilla/5.0 (test browser for sessions)')!;
    expect((await runCli(['sessions', 'revoke', session.id], serverEnv)).code).toBe(0);
    expect((await browser.get('/account')).status).toBe(303);
    expect((await frank.get('/account')).status).toBe(200);

    // Unknown or already ended: an error naming it, exit 1; a missing id is a usage error.
    const again = await runCli(['sessions', 'revoke', session.id], serverEnv);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no live sign-in');
    expect((await runCli(['sessions', 'revoke'], serverEnv)).code).toBe(2);
    expect((await runCli(['sessions', 'list', '--user', 'nobody'], serverEnv)).code).toBe(1);
  }, 40_000);
});
