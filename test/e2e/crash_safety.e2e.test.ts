/**
 * Crash safety: SIGKILL the server while flows are running, restart it on the same file, and
 * check that every grant approved before the kill is redeemable exactly once and that the
 * database is intact (PRAGMA integrity_check).
 */
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deviceGrantType } from '../helpers/app.js';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, startServerProcess } from '../helpers/process.js';

describe('crash safety', () => {
  it('approved grants survive a SIGKILL and are redeemable exactly once after restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-crash-'));
    const env = { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: 'off' };
    try {
      expect((await runCli(['users', 'add', 'dora', '--email', 'dora@example.com', '--password-stdin'], env, 'dora-password')).code).toBe(0);
      expect((await runCli(['clients', 'add', 'tv', '--grant-type', 'device_code', '--grant-type', 'refresh_token'], env)).code).toBe(0);
      let server = await startServerProcess({ ...env, LATCHKEY_DEVICE_INTERVAL: '1' });
      const post = async (base: string, path: string, fields: Record<string, string>) => {
        const res = await fetch(base + path, { method: 'POST', body: new URLSearchParams(fields) });
        return { status: res.status, body: (await res.json()) as Record<string, string> };
      };

      // Five grants approved by a person before the crash.
      const approved: string[] = [];
      const browser = new Browser(fetchTransport(server.base));
      for (let i = 0; i < 5; i++) {
        const device = await post(server.base, '/oauth/device/code', { client_id: 'tv', scope: 'openid offline_access' });
        await actOnDeviceCode(browser, `/activate?user_code=${device.body.user_code}`, { username: 'dora', password: 'dora-password' }, 'allow');
        approved.push(device.body.device_code!);
      }

      // Traffic in flight at the moment of the kill: new device codes and polls, not awaited.
      const inFlight = Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0
          ? post(server.base, '/oauth/device/code', { client_id: 'tv' })
          : post(server.base, '/oauth/token', { grant_type: deviceGrantType, client_id: 'tv', device_code: `lk_dc_in_flight_${i}` })
        ).catch(() => undefined),
      );
      // Killed as soon as the first is answered: the others are then at the server or on their way.
      await Promise.race(inFlight);
      expect(await server.stop('SIGKILL')).toBeNull(); // no exit code: it died
      expect(server.child.signalCode).toBe('SIGKILL');
      await Promise.all(inFlight);

      const db = new Database(env.LATCHKEY_DB, { readonly: true });
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      db.close();

      server = await startServerProcess({ ...env, LATCHKEY_DEVICE_INTERVAL: '1' });
      try {
        for (const deviceCode of approved) {
          const results = await Promise.all(
            Array.from({ length: 3 }, () => post(server.base, '/oauth/token', { grant_type: deviceGrantType, client_id: 'tv', device_code: deviceCode })),
          );
          expect(results.filter((r) => r.status === 200)).toHaveLength(1);
          expect(results.filter((r) => r.body.error === 'invalid_grant')).toHaveLength(2);
        }
      } finally {
        await server.stop();
      }
      const after = new Database(env.LATCHKEY_DB, { readonly: true });
      expect(after.pragma('integrity_check', { simple: true })).toBe('ok');
      after.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
