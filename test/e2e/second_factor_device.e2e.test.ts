/**
 * A second factor on the device path, as people and operators meet it: a real
 * `latchkey serve` process on a real SQLite file, the `latchkey` executable signing in with
 * --device, and the test playing the person's browser over the socket. The person sets up an
 * authenticator app, approves the device with password + TOTP (the tokens say so), a replayed code
 * is refused, and an operator's `latchkey users mfa-reset` takes the factors away, audited.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { totpCodeAt, totpPeriod } from '../../src/mfa/totp.js';
import { Browser, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { shownRecoveryCodes, shownSecret } from '../helpers/mfa.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let cliEnv: Record<string, string>;
const password = 'dana-password';
const now = () => Date.now() / 1000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-mfa-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  expect((await runCli(['users', 'add', 'dana', '--email', 'dana@example.com', '--password-stdin'], serverEnv, password)).code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_DEVICE_INTERVAL: '1' });
  cliEnv = { HOME: join(dir, 'home'), LATCHKEY_ISSUER: server.base };
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const credentials = () =>
  JSON.parse(readFileSync(join(dir, 'home', '.latchkey', 'credentials.json'), 'utf8')) as { profiles: Record<string, { access_token: string }> };

/** Enters the device's code on /activate; returns the page that follows (sign-in, second step or confirmation). */
async function enterCode(browser: Browser, userCode: string): Promise<BrowserResponse> {
  const entry = await browser.get(`/activate?user_code=${userCode}`);
  return browser.follow(
    await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: inputValue(entry.body, 'user_code')! }),
  );
}

async function allow(browser: Browser, confirmation: BrowserResponse): Promise<BrowserResponse> {
  expect(confirmation.body, confirmation.body.slice(0, 400)).toContain('name="decision"');
  return browser.post('/activate/confirm', {
    csrf_token: inputValue(confirmation.body, 'csrf_token')!,
    user_code: inputValue(confirmation.body, 'user_code')!,
    decision: 'allow',
  });
}

const answer = (browser: Browser, step: BrowserResponse, otp: string) =>
  browser.post('/login/second-factor', { csrf_token: inputValue(step.body, 'csrf_token')!, return_to: inputValue(step.body, 'return_to') ?? '', otp });

let secret: string;
let recoveryCodes: string[];

describe('a person with an authenticator app approves a device', () => {
  it('sets the app up on /account/security over the socket', async () => {
    const browser = new Browser(fetchTransport(server.base));
    expect((await signIn(browser, await browser.get('/login?return_to=%2Faccount%2Fsecurity'), 'dana', password)).status).toBe(303);
    const setup = await browser.get('/account/security/totp');
    secret = shownSecret(setup.body);
    const done = await browser.post('/account/security/totp', {
      csrf_token: inputValue(setup.body, 'csrf_token')!,
      setup: inputValue(setup.body, 'setup')!,
      otp: totpCodeAt(secret, now()),
    });
    expect(done.status, done.body.slice(0, 400)).toBe(200);
    recoveryCodes = shownRecoveryCodes(done.body);
    expect(recoveryCodes).toHaveLength(10);
  });

  it('latchkey login --device: password, then the TOTP code, then Allow; the tokens say pwd+otp and urn:latchkey:mfa', async () => {
    const cli = spawnCli(['login', '--device', '--profile', 'tv'], cliEnv);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    const browser = new Browser(fetchTransport(server.base));
    const login = await enterCode(browser, userCode!);
    expect(login.body).toContain('action="/login"');
    const afterPassword = await signIn(browser, login, 'dana', password);
    expect(afterPassword.location).toMatch(/^\/login\/second-factor\?return_to=/);
    const step = await browser.get(afterPassword.location!);
    expect(step.body).toContain('name="otp"');
    // No Allow button before the second factor: the password alone opens nothing.
    expect((await enterCode(browser, userCode!)).body).not.toContain('name="decision"');
    // The next step's code (the enrolment spent this one): one step of drift is accepted.
    const code = totpCodeAt(secret, now() + totpPeriod);
    const confirmation = await browser.follow(await answer(browser, step, code));
    const result = await allow(browser, confirmation);
    expect(result.status).toBe(200);
    expect(await cli.exit).toBe(0);
    expect(cli.stderr()).toContain(`as dana (profile tv)`);
    // The device flow issues no id_token (contract): the access token carries amr and acr (RFC 9068 §2.2.1).
    const jwks = createRemoteJWKSet(new URL(`${server.base}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(credentials().profiles.tv!.access_token, jwks, { issuer: server.base });
    expect(payload.amr).toEqual(['pwd', 'otp']);
    expect(payload.acr).toBe('urn:latchkey:mfa');

    // The same code again, from another browser, in the same window: refused.
    const other = new Browser(fetchTransport(server.base));
    const again = await signIn(other, await other.get('/login?return_to=%2Factivate'), 'dana', password);
    const replayed = await answer(other, await other.get(again.location!), code);
    expect(replayed.status).toBe(401);
    expect(replayed.body).toContain('That code was used already');
  }, 30_000);

  it('a recovery code approves a device once; the same code a second time does not', async () => {
    const cli = spawnCli(['login', '--device', '--profile', 'spare'], cliEnv);
    const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
    const browser = new Browser(fetchTransport(server.base));
    const afterPassword = await signIn(browser, await enterCode(browser, userCode!), 'dana', password);
    const step = await browser.get(afterPassword.location!);
    const used = recoveryCodes[0]!.toUpperCase();
    expect((await allow(browser, await browser.follow(await answer(browser, step, used)))).status).toBe(200);
    expect(await cli.exit).toBe(0);
    expect(decodeJwt(credentials().profiles.spare!.access_token).amr).toEqual(['pwd', 'otp']);
    const other = new Browser(fetchTransport(server.base));
    const again = await signIn(other, await other.get('/login?return_to=%2Factivate'), 'dana', password);
    expect((await answer(other, await other.get(again.location!), used)).status).toBe(401);
  }, 30_000);
});

describe('latchkey users mfa-reset', () => {
  it('removes the factors, says so, and writes an audit line; the next sign-in is the password alone', async () => {
    const reset = await runCli(['users', 'mfa-reset', 'dana'], serverEnv);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stderr).toContain('Removed the second factors of dana');
    const auditLine = reset.stderr.split('\n').find((l) => l.includes('user.second_factors_reset'));
    expect(JSON.parse(auditLine!)).toMatchObject({ source: 'cli', event: 'user.second_factors_reset', username: 'dana', hadFactors: true });
    expect(reset.stderr).not.toContain(secret);
    const browser = new Browser(fetchTransport(server.base));
    const signedIn = await signIn(browser, await browser.get('/login?return_to=%2Factivate'), 'dana', password);
    expect(signedIn.location).toBe('/activate');
    const overview = await browser.get('/account/security');
    expect(overview.body).not.toContain('On since');
    // Again: nothing left to remove. An unknown user: an error and exit 1.
    expect((await runCli(['users', 'mfa-reset', 'dana'], serverEnv)).stderr).toContain('dana had no second factors');
    const unknown = await runCli(['users', 'mfa-reset', 'nobody'], serverEnv);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no user "nobody"');
    expect((await runCli(['users', 'mfa-reset'], serverEnv)).code).toBe(2);
  }, 30_000);
});
