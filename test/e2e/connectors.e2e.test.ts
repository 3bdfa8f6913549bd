/**
 * Connectors end to end (issue 15), as an operator sets them up and a person uses them: the built
 * `latchkey` executable adds each connector (secrets on stdin) to a running `latchkey serve`, and
 * the person signs in through a real upstream — a second `latchkey serve` ("Latchkey behind
 * Latchkey"), panva's oidc-provider, OpenLDAP's slapd with StartTLS, and a GitHub stand-in (GitHub
 * itself cannot be reached from here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { decodeJwt } from 'jose';
import { deviceGrantType } from '../helpers/app.js';
import { Browser, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { directory, ldapRequired, slapdAvailable, startSlapd, type RunningSlapd } from '../helpers/slapd.js';
import { startFakeGithub, type FakeGithub } from '../helpers/upstreams.js';

let dir: string;
let env: Record<string, string>;
let server: ServerProcess;
let slapd: RunningSlapd | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-connectors-'));
  if (slapdAvailable) slapd = await startSlapd();
  env = { LATCHKEY_DB: join(dir, 'downstream.db'), LATCHKEY_DEVICE_INTERVAL: '1', LATCHKEY_UPSTREAM_TIMEOUT: '5' };
  // The directory's StartTLS certificate is self-signed: the server trusts it as an extra CA.
  server = await startServerProcess({ ...env, ...(slapd ? { NODE_EXTRA_CA_CERTS: slapd.caFile } : {}) });
  env.LATCHKEY_ISSUER = server.base;
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await slapd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The downstream's sign-in page: press the connector's button; returns the redirect upstream. */
async function pressConnector(browser: Browser, connector: string, returnTo = '/activate'): Promise<BrowserResponse> {
  const login = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
  expect(login.body).toContain(`value="${connector}"`);
  return browser.post('/login/connector', { csrf_token: inputValue(login.body, 'csrf_token')!, return_to: inputValue(login.body, 'return_to')!, connector });
}

const pathOf = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};

/**
 * The person at an upstream Latchkey, after its sign-in: the downstream's callback here is a
 * loopback address (a test machine), so the upstream asks for a one-click confirmation first
 * (RFC 8252 §8.6) — which the person gives.
 */
async function confirmIfAsked(browser: Browser, page: BrowserResponse): Promise<BrowserResponse> {
  if (page.status !== 200 || !page.body.includes('name="decision"')) return page;
  return browser.post('/authorize/decision', { csrf_token: inputValue(page.body, 'csrf_token')!, interaction: inputValue(page.body, 'interaction')!, decision: 'allow' });
}

/** Follows redirects that stay at `base` (absolute or relative), returning the first that leaves it or a page. */
async function followAt(browser: Browser, base: string, res: BrowserResponse): Promise<BrowserResponse> {
  let page = res;
  for (let i = 0; i < 10 && page.location && (page.location.startsWith('/') || page.location.startsWith(base)); i++) {
    page = await browser.get(page.location.startsWith('/') ? page.location : pathOf(page.location));
  }
  return page;
}

async function users(): Promise<Array<Record<string, unknown>>> {
  const listed = await runCli(['users', 'list', '--json'], env);
  expect(listed.code).toBe(0);
  return JSON.parse(listed.stdout);
}

describe('Latchkey behind Latchkey', () => {
  let upstream: ServerProcess;
  let upstreamEnv: Record<string, string>;

  beforeAll(async () => {
    upstreamEnv = { LATCHKEY_DB: join(dir, 'upstream.db') };
    expect((await runCli(['users', 'add', 'ursula', '--email', 'ursula@upstream.example', '--name', 'Ursula Upstream', '--password-stdin'], upstreamEnv, 'ursula-password')).code).toBe(0);
    upstream = await startServerProcess(upstreamEnv);
    upstreamEnv.LATCHKEY_ISSUER = upstream.base;
  });
  afterAll(() => upstream?.stop());

  it('the operator registers the downstream at the upstream and adds the connector; a person signs in through both', async () => {
    const client = await runCli(
      ['clients', 'add', 'downstream', '--name', 'Downstream Latchkey', '--confidential', '--first-party', '--redirect-uri', `${server.base}/connectors/company/callback`],
      upstreamEnv,
    );
    expect(client.code).toBe(0);
    const secret = client.stdout.match(/lk_cs_\S+/)![0];
    const added = await runCli(
      ['connectors', 'add', 'company', '--type', 'oidc', '--issuer', upstream.base, '--client-id', 'downstream', '--client-secret-stdin', '--name', 'Company Latchkey'],
      env,
      `${secret}\n`,
    );
    expect(added.code).toBe(0);
    expect(added.stdout).toBe(`redirect_uri: ${server.base}/connectors/company/callback\n`);
    expect(added.stderr).toContain('warning: the issuer is plain http');
    const listed = JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout);
    expect(listed).toContainEqual(expect.objectContaining({ id: 'company', type: 'oidc', name: 'Company Latchkey', issuer: upstream.base, has_secret: true }));
    expect(JSON.stringify(listed)).not.toContain(secret);

    const person = new Browser(fetchTransport(server.base));
    const atUpstream = new Browser(fetchTransport(upstream.base));
    const start = await pressConnector(person, 'company');
    expect(start.location!.startsWith(`${upstream.base}/authorize?`)).toBe(true);
    // At the upstream: its own sign-in page, then straight back (a first-party client, no consent).
    let page = await atUpstream.get(pathOf(start.location!));
    expect(page.location).toMatch(/^\/login\?return_to=/);
    page = await signIn(atUpstream, await atUpstream.get(page.location!), 'ursula', 'ursula-password');
    page = await confirmIfAsked(atUpstream, await atUpstream.get(page.location!));
    expect([302, 303]).toContain(page.status);
    const callback = new URL(page.location!);
    expect(callback.origin + callback.pathname).toBe(`${server.base}/connectors/company/callback`);
    expect(callback.searchParams.get('iss')).toBe(upstream.base);
    const back = await person.get(pathOf(callback.href));
    expect(back.status).toBe(303);
    expect(back.location).toBe('/activate');
    expect((await users()).find((u) => u.source === 'company')).toMatchObject({ username: 'ursula', email: 'ursula@upstream.example', name: 'Ursula Upstream' });
  });

  it('a device then approved by that person gets tokens for the user the upstream sign-in made', async () => {
    expect((await runCli(['clients', 'add', 'tv', '--grant-type', 'device_code'], env)).code).toBe(0);
    const device = await (
      await fetch(`${server.base}/oauth/device/code`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ client_id: 'tv', scope: 'openid profile' }) })
    ).json();
    const person = new Browser(fetchTransport(server.base));
    const atUpstream = new Browser(fetchTransport(upstream.base));
    const confirm = `/activate/confirm?user_code=${device.user_code}`;
    const start = await pressConnector(person, 'company', confirm);
    let page = await atUpstream.get(pathOf(start.location!));
    page = await signIn(atUpstream, await atUpstream.get(page.location!), 'ursula', 'ursula-password');
    page = await confirmIfAsked(atUpstream, await atUpstream.get(page.location!));
    const back = await person.get(pathOf(page.location!));
    expect(back.location).toBe(confirm);
    const confirmation = await person.get(confirm);
    const allowed = await person.post('/activate/confirm', { csrf_token: inputValue(confirmation.body, 'csrf_token')!, user_code: device.user_code, decision: 'allow' });
    expect(allowed.status).toBe(200);
    const tokens = await (
      await fetch(`${server.base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: deviceGrantType, client_id: 'tv', device_code: device.device_code }) })
    ).json();
    const ursula = (await users()).find((u) => u.source === 'company')!;
    expect(decodeJwt(tokens.access_token).sub).toBe(ursula.id);
  });
});

describe('oidc-provider as the upstream', () => {
  let op: Server;
  let opBase: string;

  beforeAll(async () => {
    op = createServer();
    await new Promise<void>((resolve) => op.listen(0, '127.0.0.1', resolve));
    opBase = `http://127.0.0.1:${(op.address() as AddressInfo).port}`;
    const provider = new Provider(opBase, {
      clients: [{ client_id: 'latchkey', client_secret: 'oidc-provider-secret', redirect_uris: [`${server.base}/connectors/op/callback`], grant_types: ['authorization_code'], response_types: ['code'] }],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      findAccount: async (_ctx, id) => ({
        accountId: id,
        claims: async () => ({ sub: `op-${id}`, email: `${id}@op.example`, email_verified: true, name: `${id} from oidc-provider`, preferred_username: id, groups: ['readers', 'writers'] }),
      }),
      features: { devInteractions: { enabled: true } },
      cookies: { keys: ['a-cookie-signing-key-for-tests'] },
    });
    op.on('request', provider.callback());
  });
  afterAll(() => new Promise<void>((resolve) => op.close(() => resolve())));

  it('signs a person in with PKCE, nonce and the iss response parameter; groups from --groups-claim', async () => {
    const added = await runCli(
      ['connectors', 'add', 'op', '--type', 'oidc', '--issuer', opBase, '--client-id', 'latchkey', '--client-secret-stdin', '--scope', 'openid email profile groups', '--groups-claim', 'groups', '--name', 'OP'],
      env,
      'oidc-provider-secret',
    );
    expect(added.code).toBe(0);
    const person = new Browser(fetchTransport(server.base));
    const atOp = new Browser(fetchTransport(opBase));
    const start = await pressConnector(person, 'op');
    let page = await followAt(atOp, opBase, await atOp.get(pathOf(start.location!)));
    // oidc-provider's development login form, then its consent form.
    const loginAction = page.body.match(/action="([^"]+)"/)![1]!;
    page = await followAt(atOp, opBase, await atOp.post(pathOf(new URL(loginAction, opBase).href), { prompt: 'login', login: 'olga', password: 'anything' }));
    if (page.body.includes('name="prompt" value="consent"')) {
      const consentAction = page.body.match(/action="([^"]+)"/)![1]!;
      page = await followAt(atOp, opBase, await atOp.post(pathOf(new URL(consentAction, opBase).href), { prompt: 'consent' }));
    }
    const callback = new URL(page.location!);
    expect(callback.pathname).toBe('/connectors/op/callback');
    expect(callback.searchParams.get('iss')).toBe(opBase);
    const back = await person.get(pathOf(callback.href));
    expect(back.status).toBe(303);
    expect((await users()).find((u) => u.source === 'op')).toMatchObject({ username: 'olga', email: 'olga@op.example', groups: ['readers', 'writers'] });
  });
});

describe('GitHub (a stand-in: github.com cannot be reached from here)', () => {
  let github: FakeGithub;
  beforeAll(async () => {
    github = await startFakeGithub();
  });
  afterAll(() => github?.close());

  it('--api-url, --org: a member signs in with org:team groups; the connector is listed and removed', async () => {
    const bad = await runCli(['connectors', 'add', 'gh', '--type', 'github', '--client-id', github.clientId], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--client-secret-stdin');
    const added = await runCli(['connectors', 'add', 'gh', '--type', 'github', '--client-id', github.clientId, '--client-secret-stdin', '--org', 'acme', '--api-url', github.apiUrl], env, `${github.clientSecret}\n`);
    expect(added.code).toBe(0);
    const person = new Browser(fetchTransport(server.base));
    const start = await pressConnector(person, 'gh');
    const atGithub = await fetch(start.location!, { redirect: 'manual' });
    const back = await person.get(pathOf(atGithub.headers.get('location')!));
    expect(back.status).toBe(303);
    expect((await users()).find((u) => u.source === 'gh')).toMatchObject({ username: 'octo-cat', email: 'octo@example.com', groups: ['acme:platform'] });
    expect((await runCli(['connectors', 'remove', 'gh'], env)).code).toBe(0);
    expect((await runCli(['connectors', 'remove', 'gh'], env)).code).toBe(1);
    expect((await person.get('/login')).status).toBe(303); // still signed in; the button is gone for others
    expect((await new Browser(fetchTransport(server.base)).get('/login')).body).not.toContain('value="gh"');
  });
});

if (!slapdAvailable && ldapRequired) {
  describe('LDAP with StartTLS', () => {
    it('has slapd (LATCHKEY_REQUIRE_LDAP=1)', () => expect.fail('slapd is not installed'));
  });
}

(slapdAvailable ? describe : describe.skip)('LDAP with StartTLS (a real slapd)', () => {
  it("the password form signs a directory user in over StartTLS, with the directory's groups; the bind password is stored sealed", async () => {
    const added = await runCli(
      ['connectors', 'add', 'corp', '--type', 'ldap', '--url', slapd!.url, '--bind-dn', directory.bindDn, '--bind-password-stdin', '--user-base', directory.userBase, '--group-base', directory.groupBase, '--start-tls'],
      env,
      `${directory.bindPassword}\n`,
    );
    expect(added.code).toBe(0);
    expect(added.stdout).toBe('');
    const person = new Browser(fetchTransport(server.base));
    const res = await signIn(person, await person.get('/login'), 'dora', directory.people.dora.password);
    expect(res.status).toBe(303);
    expect((await users()).find((u) => u.source === 'corp')).toMatchObject({ username: 'dora', groups: ['engineers', 'ops'] });

    const Database = (await import('better-sqlite3')).default;
    const db = new Database(env.LATCHKEY_DB!, { readonly: true });
    const row = db.prepare("SELECT secret FROM connectors WHERE id = 'corp'").get() as { secret: string };
    db.close();
    expect(row.secret).toMatch(/^lk1\./);
    expect(row.secret).not.toContain(directory.bindPassword);
  });

  it('a StartTLS directory whose certificate is not trusted is unavailable, not a 500', async () => {
    const untrusted = await startServerProcess({ LATCHKEY_DB: join(dir, 'untrusted.db'), LATCHKEY_UPSTREAM_TIMEOUT: '3' });
    try {
      const uenv = { LATCHKEY_DB: join(dir, 'untrusted.db') };
      await runCli(['connectors', 'add', 'corp', '--type', 'ldap', '--url', slapd!.url, '--bind-dn', directory.bindDn, '--bind-password-stdin', '--user-base', directory.userBase, '--start-tls'], uenv, directory.bindPassword);
      const person = new Browser(fetchTransport(untrusted.base));
      const res = await signIn(person, await person.get('/login'), 'dora', directory.people.dora.password);
      expect(res.status).toBe(401);
    } finally {
      await untrusted.stop();
    }
  });
});
