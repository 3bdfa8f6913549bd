/**
 * Secrets at rest: run every flow against a real SQLite file, then read the raw database (and its
 * WAL) byte for byte and look for every secret that was handed out or typed in. None may appear.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addApi, addClient, addUser, deviceGrantType, form, pkcePair, testApp } from '../helpers/app.js';
import { actOnDeviceCode, Browser, injectTransport, signIn } from '../helpers/browser.js';

describe('secrets at rest', () => {
  it('no issued code, token, secret or password is stored in the clear', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'latchkey-at-rest-'));
    const path = join(dir, 'latchkey.db');
    const t = await testApp({}, { path });
    const secrets: string[] = [];
    try {
      const password = 'Correct-Horse-Battery-Staple-42';
      secrets.push(password);
      await addUser(t.store, 'alice', password);
      await addApi(t.store, 'https://api.example.com');
      await addClient(t.store, 'tv');
      const { secret } = await addClient(t.store, 'web', {
        confidential: true,
        redirectUris: ['https://app.example.com/cb'],
        grantTypes: ['authorization_code', 'refresh_token'],
        firstParty: true,
      });
      secrets.push(secret!);

      // Device flow: device code, user code (as shown and as typed), tokens.
      const device = (await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'tv', scope: 'openid offline_access' }) })).json();
      secrets.push(device.device_code, device.user_code, device.user_code.replace('-', ''), device.user_code.replace('-', '').toLowerCase());
      const browser = new Browser(injectTransport(t.app));
      await actOnDeviceCode(browser, `/activate?user_code=${device.user_code}`, { username: 'alice', password }, 'allow');
      for (const name of ['latchkey_session', 'latchkey_csrf']) secrets.push(browser.cookies.get(name)!);
      const deviceTokens = (
        await t.app.inject({ method: 'POST', url: '/oauth/token', ...form({ grant_type: deviceGrantType, client_id: 'tv', device_code: device.device_code }) })
      ).json();
      secrets.push(deviceTokens.refresh_token);

      // Refresh: the rotated token and its successor.
      const refreshed = (
        await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          ...form({ grant_type: 'refresh_token', client_id: 'tv', refresh_token: deviceTokens.refresh_token }),
        })
      ).json();
      secrets.push(refreshed.refresh_token);

      // Authorization Code flow: the code, its PKCE verifier, the tokens.
      const pkce = pkcePair();
      const other = new Browser(injectTransport(t.app));
      await signIn(other, await other.get('/login'), 'alice', password);
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: 'web',
        redirect_uri: 'https://app.example.com/cb',
        scope: 'openid offline_access',
        state: 's',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      });
      const code = new URL((await other.get(`/authorize?${query}`)).location!).searchParams.get('code')!;
      secrets.push(code, pkce.verifier, other.cookies.get('latchkey_session')!);
      const codeTokens = (
        await t.app.inject({
          method: 'POST',
          url: '/oauth/token',
          ...form({
            grant_type: 'authorization_code',
            client_id: 'web',
            client_secret: secret!,
            code,
            redirect_uri: 'https://app.example.com/cb',
            code_verifier: pkce.verifier,
          }),
        })
      ).json();
      secrets.push(codeTokens.refresh_token);
      // The server's own secrets: a stolen database must not let anyone forge a CSRF token or a
      // user-code digest, nor sign a token.
      secrets.push(t.app.services.csrfSecret, t.app.services.userCodeKey);
      expect(secrets.every((s) => typeof s === 'string' && s.length >= 8)).toBe(true);
    } finally {
      await t.close();
    }
    const files = [path, `${path}-wal`, `${path}-shm`].filter(existsSync);
    const raw = Buffer.concat(files.map((f) => readFileSync(f)));
    expect(raw.length).toBeGreaterThan(10_000);
    for (const secret of secrets) {
      expect({ secret, found: raw.includes(Buffer.from(secret, 'utf8')) }).toEqual({ secret, found: false });
    }
    expect(raw.includes(Buffer.from('PRIVATE KEY'))).toBe(false);
    // The key that opens them is beside the database, not in it.
    const keyFile = readFileSync(`${path}.key`, 'utf8').trim();
    expect(raw.includes(Buffer.from(keyFile))).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});
