/**
 * A person's stored sign-ins over time, with the real executable against a real server on a
 * non-default issuer (a team server, not http://localhost:3000): `latchkey status`, a sign-in
 * that ends, the hints that say how to sign in again, and `latchkey login` without --issuer
 * returning to the profile's own server. Plus what the CLI calls itself on the wire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { arch, tmpdir, type } from 'node:os';
import { join } from 'node:path';
import { actOnDeviceCode, Browser, fetchTransport } from '../helpers/browser.js';
import { runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let home: string;
/** No LATCHKEY_ISSUER: the default issuer is http://localhost:3000, not this server. */
let cliEnv: Record<string, string>;
const password = 'carol-password';
const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-profiles-'));
  const serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  const added = await runCli(
    ['users', 'add', 'carol', '--email', 'carol@example.com', '--name', 'Carol Client', '--profile-url', 'https://carol.example/about', '--password-stdin'],
    serverEnv,
    password,
  );
  expect(added.code).toBe(0);
  server = await startServerProcess({ ...serverEnv, LATCHKEY_ACCESS_TOKEN_TTL: '3600', LATCHKEY_DEVICE_INTERVAL: '1' });
  home = join(dir, 'home');
  cliEnv = { HOME: home };
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const credentialsPath = () => join(home, '.latchkey', 'credentials.json');
type StoredFile = { version: number; profiles: Record<string, Record<string, unknown>> };
const credentials = () => JSON.parse(readFileSync(credentialsPath(), 'utf8')) as StoredFile;
function editProfile(name: string, change: (profile: Record<string, unknown>) => void) {
  const file = credentials();
  change(file.profiles[name]!);
  writeFileSync(credentialsPath(), JSON.stringify(file, null, 2));
}

/** `latchkey login --device …`, approved by carol on the verification page. */
async function deviceLogin(args: string[]) {
  const cli = spawnCli(['login', '--device', ...args], cliEnv);
  const [, userCode] = await cli.waitForStderr(/enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})/);
  const approved = await actOnDeviceCode(new Browser(fetchTransport(server.base)), `/activate?user_code=${userCode}`, { username: 'carol', password }, 'allow');
  expect(approved.status).toBe(200);
  expect(await cli.exit).toBe(0);
  return cli;
}

interface StatusJson {
  credentials_file: string;
  profiles: Record<string, unknown>[];
}

describe('latchkey status', () => {
  it('with no stored sign-in says so and exits 0', async () => {
    const res = await runCli(['status'], cliEnv);
    expect(res.code).toBe(0);
    expect(res.stdout).toBe(`Not signed in: no profile is stored in ${credentialsPath()}. Sign in with "latchkey login".\n`);
    const json = await runCli(['status', '--json'], cliEnv);
    expect(JSON.parse(json.stdout)).toEqual({ credentials_file: credentialsPath(), profiles: [] });
  });

  it('lists a device sign-in: issuer, account, expiry, refresh, DPoP, client — and never a token', async () => {
    await deviceLogin(['--issuer', server.base, '--profile', 'team']);
    const stored = credentials().profiles.team!;
    const res = await runCli(['status'], cliEnv);
    expect(res.code).toBe(0);
    const [header, row] = res.stdout.split('\n');
    expect(header).toMatch(/^PROFILE +ISSUER +ACCOUNT +ACCESS TOKEN +REFRESH +DPOP +CLIENT +AUDIENCE$/);
    expect(row).toMatch(new RegExp(`^team +${server.base} +carol <carol@example.com> +valid, expires in (59|60) min +yes +no +latchkey-cli +-$`));
    const json = JSON.parse((await runCli(['status', '--json'], cliEnv)).stdout) as StatusJson;
    expect(json.profiles).toEqual([
      {
        profile: 'team',
        state: 'valid',
        issuer: server.base,
        account: { sub: expect.any(String), preferred_username: 'carol', email: 'carol@example.com' },
        client_id: 'latchkey-cli',
        audience: null,
        access_token_expires_at: new Date(Number(stored.expires_at) * 1000).toISOString().replace('.000Z', 'Z'),
        refresh_token: true,
        dpop: false,
        sign_in: null,
      },
    ]);
    for (const secret of [stored.access_token, stored.refresh_token]) {
      expect(typeof secret).toBe('string');
      expect(res.stdout).not.toContain(secret);
      expect(JSON.stringify(json)).not.toContain(secret);
    }
  });

  it('whoami --json keeps the OIDC profile claim and names the stored profile latchkey_profile', async () => {
    const res = await runCli(['whoami', '--profile', 'team', '--json'], cliEnv);
    expect(res.code).toBe(0);
    const claims = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(claims).toMatchObject({
      profile: 'https://carol.example/about',
      latchkey_profile: 'team',
      latchkey_issuer: server.base,
      preferred_username: 'carol',
    });
  });
});

describe('a sign-in that ended', () => {
  it('the hint names --profile and --issuer; status shows it; login without --issuer returns to the stored issuer', async () => {
    const { refresh_token: refreshToken } = credentials().profiles.team!;
    const revoked = await fetch(`${server.base}/oauth/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: 'latchkey-cli', token: String(refreshToken), token_type_hint: 'refresh_token' }),
    });
    expect(revoked.status).toBe(200);
    // The access token's hour has passed, as far as the CLI can tell: the next use must refresh.
    editProfile('team', (p) => (p.expires_at = Math.floor(Date.now() / 1000) - 7200));
    const again = `latchkey login --profile team --issuer ${server.base}`;

    const status = await runCli(['status'], cliEnv);
    expect(status.stdout).toMatch(/team .* expired 2 h ago +yes /);
    expect(status.stdout).toContain(
      `team: the access token expired; the next "latchkey token" renews it. Should that fail (the sign-in ended), run "${again}"`,
    );

    const token = await runCli(['token', '--profile', 'team'], cliEnv);
    expect(token.code).toBe(6);
    expect(token.stderr).toBe(`latchkey: your sign-in has ended (revoked or expired): run "${again}"\n`);

    // As the person would: no --issuer (and LATCHKEY_ISSUER unset, so the default is localhost:3000).
    const login = await deviceLogin(['--profile', 'team']);
    expect(login.stderr()).toContain(`Signing in again at ${server.base}, where the profile "team" was signed in.`);
    expect(login.stderr()).toContain(`To sign in, open ${server.base}/activate`);
    expect(login.stderr()).toContain(`Signed in to ${server.base} as carol (profile team).`);
    expect(credentials().profiles.team).toMatchObject({ issuer: server.base, client_id: 'latchkey-cli', scope: 'openid email profile offline_access' });
    expect((await runCli(['token', '--profile', 'team'], cliEnv)).code).toBe(0);
  });

  it('an expired sign-in with no refresh token is shown as expired, with the command that signs it in again', async () => {
    editProfile('team', (p) => {
      delete p.refresh_token;
      p.expires_at = Math.floor(Date.now() / 1000) - 60;
    });
    const again = `latchkey login --profile team --issuer ${server.base}`;
    const status = await runCli(['status'], cliEnv);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/team .* expired (\d+ s|\d+ min) ago +no /);
    expect(status.stdout).toContain(`team: the sign-in has expired and cannot be renewed: run "${again}"`);
    expect((JSON.parse((await runCli(['status', '--json'], cliEnv)).stdout) as StatusJson).profiles[0]).toMatchObject({ state: 'expired', sign_in: again });
    const whoami = await runCli(['whoami', '--profile', 'team'], cliEnv);
    expect(whoami.code).toBe(6);
    expect(whoami.stderr).toBe(`latchkey: the access token has expired and there is no refresh token: run "${again}"\n`);
  });

  it('a profile never signed in: the hint names --profile', async () => {
    const res = await runCli(['token', '--profile', 'nowhere'], cliEnv);
    expect(res.code).toBe(6);
    expect(res.stderr).toBe('latchkey: not signed in (profile "nowhere"): run "latchkey login --profile nowhere"\n');
  });
});

describe("the CLI's User-Agent", () => {
  it('is latchkey/<version> (<OS>; <arch>) on every request: discovery, device code, polls, userinfo, refresh, revocation', async () => {
    const seen: { path: string; headers: IncomingHttpHeaders }[] = [];
    // A provider that records each request; it answers just enough for login, token, whoami and logout.
    const fake = createServer((req, res) => {
      seen.push({ path: req.url ?? '', headers: req.headers });
      const base = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
      const json = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      req.resume();
      req.on('end', () => {
        if (req.url === '/.well-known/openid-configuration') {
          return json({
            issuer: base,
            token_endpoint: `${base}/token`,
            device_authorization_endpoint: `${base}/device`,
            userinfo_endpoint: `${base}/userinfo`,
            revocation_endpoint: `${base}/revoke`,
            jwks_uri: `${base}/jwks`,
            response_types_supported: ['code'],
          });
        }
        if (req.url === '/device')
          return json({ device_code: 'dc', user_code: 'BCDF-GHJK', verification_uri: `${base}/activate`, expires_in: 60, interval: 1 });
        if (req.url === '/token')
          return json({ access_token: `at-${seen.length}`, token_type: 'Bearer', expires_in: 3600, refresh_token: `rt-${seen.length}` });
        if (req.url === '/userinfo') return json({ sub: 'someone' });
        if (req.url === '/revoke') return res.writeHead(200).end();
        return res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
      expect((await runCli(['login', '--device', '--issuer', issuer, '--profile', 'ua'], cliEnv)).code).toBe(0);
      editProfile('ua', (p) => (p.expires_at = Math.floor(Date.now() / 1000)));
      expect((await runCli(['token', '--profile', 'ua'], cliEnv)).code).toBe(0); // refreshes
      expect((await runCli(['whoami', '--profile', 'ua'], cliEnv)).code).toBe(0);
      expect((await runCli(['logout', '--profile', 'ua'], cliEnv)).code).toBe(0);
    } finally {
      fake.close();
    }
    expect(new Set(seen.map((r) => r.path))).toEqual(new Set(['/.well-known/openid-configuration', '/device', '/token', '/userinfo', '/revoke']));
    const expected = `latchkey/${version} (${type()}; ${arch()})`;
    expect(expected).toMatch(/^latchkey\/\d+\.\d+\.\d+ \((Linux|Darwin|Windows_NT); \w+\)$/);
    for (const request of seen) expect(request.headers['user-agent'], request.path).toBe(expected);
  });
});
