/**
 * `latchkey login --dpop` as a person runs it: the device flow with DPoP proofs and the
 * server's nonce, the key kept in the 0600 credentials file, `latchkey token` refreshing through
 * the bound refresh token, `latchkey whoami` over DPoP, and `latchkey token --dpop-proof` making
 * the proof a curl-like request to userinfo needs — which a copy of the token alone cannot pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let cliEnv: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-dpop-'));
  const serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  expect((await runCli(['users', 'add', 'erin', '--email', 'erin@example.com', '--password-stdin'], serverEnv, 'erin-password')).code).toBe(0);
  // Access tokens of 60 s: every `latchkey token` below refreshes (it refreshes unless more than a
  // minute is left), with no waiting for the clock.
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1', LATCHKEY_ACCESS_TOKEN_TTL: '60' });
  cliEnv = { HOME: join(dir, 'home'), LATCHKEY_HOME: join(dir, 'home', '.latchkey'), LATCHKEY_ISSUER: server.base };
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('latchkey login --dpop', () => {
  it('binds the tokens to a key on this machine; token, whoami and --dpop-proof use it; a copied token is refused', async () => {
    const login = spawnCli(['login', '--device', '--dpop'], cliEnv);
    const [, userCode] = await login.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    await actOnDeviceCode(
      new Browser(fetchTransport(server.base)),
      `/activate?user_code=${userCode}`,
      { username: 'erin', password: 'erin-password' },
      'allow',
    );
    expect(await login.exit, login.stderr()).toBe(0);

    const file = join(dir, 'home', '.latchkey', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8')).profiles.default;
    expect(stored.token_type).toBe('DPoP');
    expect(stored.dpop_jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(stored.dpop_jwk.d).toBeDefined();

    // Refreshes (60 s tokens: never more than a minute left) through the DPoP-bound refresh token.
    const token = await runCli(['token'], cliEnv);
    expect(token.code, token.stderr).toBe(0);
    const accessToken = token.stdout.trim();
    expect(accessToken).not.toBe(stored.access_token);
    expect((decodeJwt(accessToken).cnf as { jkt: string }).jkt).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const whoami = await runCli(['whoami', '--json'], cliEnv);
    expect(whoami.code, whoami.stderr).toBe(0);
    expect(JSON.parse(whoami.stdout).preferred_username).toBe('erin');

    const proof = await runCli(['token', '--dpop-proof', '--method', 'GET', '--url', `${server.base}/userinfo?ignored=1`], cliEnv);
    expect(proof.code, proof.stderr).toBe(0);
    const dpop = proof.stdout.trim();
    // The proof is for the token the profile holds now (`ath`): the one the request must carry.
    const latest = JSON.parse(readFileSync(file, 'utf8')).profiles.default.access_token as string;
    const ok = await fetch(`${server.base}/userinfo`, { headers: { authorization: `DPoP ${latest}`, dpop } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { sub: string }).sub).toBeTruthy();
    // The same proof again, or the token alone: refused.
    expect((await fetch(`${server.base}/userinfo`, { headers: { authorization: `DPoP ${latest}`, dpop } })).status).toBe(401);
    expect((await fetch(`${server.base}/userinfo`, { headers: { authorization: `Bearer ${latest}` } })).status).toBe(401);
    // kubectl, git and docker can only send bearer tokens: the helpers refuse a bound profile plainly.
    const kubectl = await runCli(['credential', 'kubectl'], cliEnv);
    expect(kubectl.code).toBe(1);
    expect(kubectl.stdout).toBe('');
    expect(kubectl.stderr).toContain('DPoP');
  });

  // A token for the issuer's own userinfo endpoint goes only there: no proof binds it to another request.
  it('--dpop-proof is made only for a request the token may go to: a userinfo token’s for userinfo alone', async () => {
    for (const url of ['https://elsewhere.example.com/userinfo', `${server.base}/api/v1/users`, `${server.base}/userinfo-and-more`]) {
      const proof = await runCli(['token', '--dpop-proof', '--method', 'GET', '--url', url], cliEnv);
      expect(proof.code, url).toBe(2);
      expect(proof.stdout).toBe('');
      expect(proof.stderr).toContain(`holds a token for ${server.base}/userinfo, which goes only there, not to ${url}: no proof is made for it`);
    }
    expect((await runCli(['token', '--dpop-proof', '--method', 'POST', '--url', `${server.base}/userinfo`], cliEnv)).code).toBe(0);
  });

  it('--dpop-proof needs --method and --url, and a profile signed in with --dpop', async () => {
    expect((await runCli(['token', '--dpop-proof', '--url', `${server.base}/userinfo`], cliEnv)).code).toBe(2);
    expect((await runCli(['token', '--dpop-proof', '--method', 'GET', '--url', 'not a url'], cliEnv)).code).toBe(2);
    expect((await runCli(['token', '--method', 'GET'], cliEnv)).code).toBe(2);
  });
});
