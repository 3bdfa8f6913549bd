/**
 * Connectors end to end, as an operator sets them up and a person uses them: the built
 * `latchkey` executable adds each connector (secrets on stdin) to a running `latchkey serve`, and
 * the person signs in through a real upstream — a second `latchkey serve` ("Latchkey behind
 * Latchkey"), panva's oidc-provider, OpenLDAP's slapd with StartTLS, and a GitHub stand-in (GitHub
 * itself cannot be reached from here).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { decodeJwt } from 'jose';
import { deviceGrantType } from '../helpers/app.js';
import { Browser, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { freePort, runCli, spawnCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { directory, ldapRequired, slapdAvailable, startSlapd, type RunningSlapd } from '../helpers/slapd.js';
import { startFakeGithub, startFakeOidcProvider, type FakeGithub, type FakeOidcProvider } from '../helpers/upstreams.js';

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

/**
 * The downstream's sign-in page: press the connector's button. The answer is a page that moves on
 * to the upstream (a meta refresh, and a link); returns where to.
 */
async function pressConnector(browser: Browser, connector: string, returnTo = '/activate'): Promise<string> {
  const login = await browser.get(`/login?return_to=${encodeURIComponent(returnTo)}`);
  expect(login.body).toContain(`value="${connector}"`);
  const page = await browser.post('/login/connector', {
    csrf_token: inputValue(login.body, 'csrf_token')!,
    return_to: inputValue(login.body, 'return_to')!,
    connector,
  });
  expect(page.status).toBe(200);
  const refresh = page.body.match(/<meta http-equiv="refresh" content="0;url=([^"]+)">/)?.[1];
  expect(refresh).toBeDefined();
  return refresh!.replace(/&amp;/g, '&');
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
  return browser.post('/authorize/decision', {
    csrf_token: inputValue(page.body, 'csrf_token')!,
    interaction: inputValue(page.body, 'interaction')!,
    decision: 'allow',
  });
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
    expect(
      (
        await runCli(
          ['users', 'add', 'ursula', '--email', 'ursula@upstream.example', '--name', 'Ursula Upstream', '--password-stdin'],
          upstreamEnv,
          'ursula-password',
        )
      ).code,
    ).toBe(0);
    upstream = await startServerProcess(upstreamEnv);
    upstreamEnv.LATCHKEY_ISSUER = upstream.base;
  });
  afterAll(() => upstream?.stop());

  it('the operator registers the downstream at the upstream and adds the connector; a person signs in through both', async () => {
    const client = await runCli(
      [
        'clients',
        'add',
        'downstream',
        '--name',
        'Downstream Latchkey',
        '--confidential',
        '--first-party',
        '--redirect-uri',
        `${server.base}/connectors/company/callback`,
      ],
      upstreamEnv,
    );
    expect(client.code).toBe(0);
    const secret = client.stdout.match(/lk_cs_\S+/)![0];
    const added = await runCli(
      [
        'connectors',
        'add',
        'company',
        '--type',
        'oidc',
        '--issuer',
        upstream.base,
        '--client-id',
        'downstream',
        '--client-secret-stdin',
        '--name',
        'Company Latchkey',
      ],
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
    expect(start.startsWith(`${upstream.base}/authorize?`)).toBe(true);
    // At the upstream: its own sign-in page, then straight back (a first-party client, no consent).
    let page = await atUpstream.get(pathOf(start));
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
    expect((await users()).find((u) => u.source === 'company')).toMatchObject({
      username: 'ursula',
      email: 'ursula@upstream.example',
      name: 'Ursula Upstream',
    });
  });

  it('connectors add with a client secret the upstream refuses: refused (invalid_client), nothing added, the secret never printed', async () => {
    const client = await runCli(
      ['clients', 'add', 'checked', '--confidential', '--first-party', '--redirect-uri', `${server.base}/connectors/checked/callback`],
      upstreamEnv,
    );
    expect(client.code).toBe(0);
    const refused = await runCli(
      ['connectors', 'add', 'checked', '--type', 'oidc', '--issuer', upstream.base, '--client-id', 'checked', '--client-secret-stdin'],
      env,
      'lk_cs_not-the-secret\n',
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `latchkey: connector checked not added: the token endpoint ${upstream.base}/oauth/token refused the client (invalid_client): check --client-id and the client secret`,
    );
    expect(refused.stderr).toContain('--no-check');
    expect(refused.stderr).toMatch(/ok +discovery document: /);
    expect(refused.stderr).toMatch(/not checked +redirect URI: /);
    expect(refused.stderr + refused.stdout).not.toContain('not-the-secret');
    const listed = JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout) as Array<{ id: string }>;
    expect(listed.map((c) => c.id)).not.toContain('checked');
  });

  it('a device then approved by that person gets tokens for the user the upstream sign-in made', async () => {
    expect((await runCli(['clients', 'add', 'tv', '--grant-type', 'device_code'], env)).code).toBe(0);
    const device = await (
      await fetch(`${server.base}/oauth/device/code`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: 'tv', scope: 'openid profile' }),
      })
    ).json();
    const person = new Browser(fetchTransport(server.base));
    const atUpstream = new Browser(fetchTransport(upstream.base));
    const confirm = `/activate/confirm?user_code=${device.user_code}`;
    const start = await pressConnector(person, 'company', confirm);
    let page = await atUpstream.get(pathOf(start));
    page = await signIn(atUpstream, await atUpstream.get(page.location!), 'ursula', 'ursula-password');
    page = await confirmIfAsked(atUpstream, await atUpstream.get(page.location!));
    const back = await person.get(pathOf(page.location!));
    expect(back.location).toBe(confirm);
    const confirmation = await person.get(confirm);
    const allowed = await person.post('/activate/confirm', {
      csrf_token: inputValue(confirmation.body, 'csrf_token')!,
      user_code: device.user_code,
      decision: 'allow',
    });
    expect(allowed.status).toBe(200);
    const tokens = await (
      await fetch(`${server.base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: deviceGrantType, client_id: 'tv', device_code: device.device_code }),
      })
    ).json();
    const ursula = (await users()).find((u) => u.source === 'company')!;
    expect(decodeJwt(tokens.access_token).sub).toBe(ursula.id);
  });

  it('a client asking for prompt=login: the upstream Latchkey asks the person again, though they are signed in there', async () => {
    expect((await runCli(['clients', 'add', 'web', '--first-party', '--redirect-uri', 'https://app.example.com/cb'], env)).code).toBe(0);
    const person = new Browser(fetchTransport(server.base));
    const atUpstream = new Browser(fetchTransport(upstream.base));
    // Signed in at the upstream already.
    await signIn(atUpstream, await atUpstream.get('/login'), 'ursula', 'ursula-password');
    const verifier = 'v'.repeat(50);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://app.example.com/cb',
      scope: 'openid',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      prompt: 'login',
    });
    const toLogin = await person.get(`/authorize?${query}`);
    const returnTo = decodeURIComponent(toLogin.location!.split('return_to=')[1]!.split('&')[0]!);
    const start = await pressConnector(person, 'company', returnTo);
    expect(new URL(start).searchParams.get('prompt')).toBe('login');
    let page = await atUpstream.get(pathOf(start));
    expect(page.location).toMatch(/^\/login\?return_to=.*&fresh=1$/); // asked again
    page = await signIn(atUpstream, await atUpstream.get(page.location!), 'ursula', 'ursula-password');
    page = await confirmIfAsked(atUpstream, await atUpstream.get(page.location!));
    const back = await person.get(pathOf(page.location!));
    expect(back.location).toBe(returnTo);
    const done = await person.get(back.location!);
    expect(new URL(done.location!).searchParams.get('code')).toBeTruthy();
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
      clients: [
        {
          client_id: 'latchkey',
          client_secret: 'oidc-provider-secret',
          redirect_uris: [`${server.base}/connectors/op/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
      scopes: ['openid', 'email', 'profile', 'groups'],
      findAccount: async (_ctx, id) => ({
        accountId: id,
        claims: async () => ({
          sub: `op-${id}`,
          email: `${id}@op.example`,
          email_verified: true,
          name: `${id} from oidc-provider`,
          preferred_username: id,
          groups: ['readers', 'writers'],
        }),
      }),
      features: { devInteractions: { enabled: true } },
      cookies: { keys: ['a-cookie-signing-key-for-tests'] },
    });
    const handle = provider.callback();
    op.on('request', (request, response) => void handle(request, response));
  });
  afterAll(() => new Promise<void>((resolve) => op.close(() => resolve())));

  it('signs a person in with PKCE, nonce and the iss response parameter; groups from --groups-claim', async () => {
    const added = await runCli(
      [
        'connectors',
        'add',
        'op',
        '--type',
        'oidc',
        '--issuer',
        opBase,
        '--client-id',
        'latchkey',
        '--client-secret-stdin',
        '--scope',
        'openid email profile groups',
        '--groups-claim',
        'groups',
        '--name',
        'OP',
      ],
      env,
      'oidc-provider-secret',
    );
    expect(added.code).toBe(0);
    const person = new Browser(fetchTransport(server.base));
    const atOp = new Browser(fetchTransport(opBase));
    const start = await pressConnector(person, 'op');
    let page = await followAt(atOp, opBase, await atOp.get(pathOf(start)));
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
    const added = await runCli(
      ['connectors', 'add', 'gh', '--type', 'github', '--client-id', github.clientId, '--client-secret-stdin', '--org', 'acme', '--api-url', github.apiUrl],
      env,
      `${github.clientSecret}\n`,
    );
    expect(added.code).toBe(0);
    const person = new Browser(fetchTransport(server.base));
    const start = await pressConnector(person, 'gh');
    const atGithub = await fetch(start, { redirect: 'manual' });
    const back = await person.get(pathOf(atGithub.headers.get('location')!));
    expect(back.status).toBe(303);
    expect((await users()).find((u) => u.source === 'gh')).toMatchObject({ username: 'octo-cat', email: 'octo@example.com', groups: ['acme:platform'] });
    expect((await person.get('/login')).status).toBe(303); // signed in
    const removed = await runCli(['connectors', 'remove', 'gh'], env);
    expect(removed.code).toBe(0);
    expect(removed.stderr).toContain('signed out the 1 user it created');
    expect((await runCli(['connectors', 'remove', 'gh'], env)).code).toBe(1);
    // The users it made can no longer sign in, so what they hold ends: this session too.
    const after = await person.get('/login');
    expect(after.status).toBe(200);
    expect(after.body).not.toContain('value="gh"');
    expect((await users()).find((u) => u.source === 'gh')).toBeDefined(); // the user stays
  });
});

describe('connectors add checks the upstream before saving it; connectors test checks a stored one', () => {
  let idp: FakeOidcProvider;
  beforeAll(async () => {
    idp = await startFakeOidcProvider();
  });
  afterAll(() => idp?.close());

  it('an issuer the upstream names otherwise: refused, naming the issuer it really has; --no-check adds it; connectors test fails until the upstream is fixed', async () => {
    const really = idp.base.replace('127.0.0.1', 'localhost');
    idp.behaviour.discoveryIssuer = really;
    const args = ['connectors', 'add', 'misnamed', '--type', 'oidc', '--issuer', idp.base, '--client-id', idp.clientId, '--client-secret-stdin'];
    const refused = await runCli(args, env, idp.clientSecret);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `latchkey: connector misnamed not added: the issuer's discovery document names the issuer ${really}, not ${idp.base}: use --issuer ${really}`,
    );
    expect(refused.stderr).toContain('add it unchecked with --no-check');
    expect(refused.stdout).toBe('');
    expect(refused.stderr).not.toContain(idp.clientSecret);

    const unchecked = await runCli([...args, '--no-check'], env, idp.clientSecret);
    expect(unchecked.code).toBe(0);
    expect(unchecked.stdout).toBe(`redirect_uri: ${server.base}/connectors/misnamed/callback\n`);

    const failing = await runCli(['connectors', 'test', 'misnamed'], env);
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain(`latchkey: connector misnamed does not work: the issuer's discovery document names the issuer ${really}`);
    expect(failing.stdout).toMatch(/FAILED +discovery document: /);

    idp.behaviour.discoveryIssuer = undefined;
    const working = await runCli(['connectors', 'test', 'misnamed'], env);
    expect(working.code, working.stderr).toBe(0);
    expect(working.stdout).toMatch(/ok +discovery document: /);
    expect(working.stdout).toMatch(/ok +signing keys \(JWKS\): \S+ holds 1 key/);
    expect(working.stdout).toContain('Connector misnamed works');
    expect(working.stdout + working.stderr).not.toContain(idp.clientSecret);
    expect((await runCli(['connectors', 'remove', 'misnamed'], env)).code).toBe(0);
  });

  it('an upstream on a closed port: refused with the cause', async () => {
    const port = await freePort();
    const refused = await runCli(['connectors', 'add', 'nowhere', '--type', 'oidc', '--issuer', `http://127.0.0.1:${port}`, '--client-id', 'x'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `latchkey: connector nowhere not added: cannot connect to http://127.0.0.1:${port}/.well-known/openid-configuration: connection refused`,
    );
  });

  it('a GitHub client secret GitHub refuses: refused (incorrect_client_credentials)', async () => {
    const github = await startFakeGithub();
    try {
      const args = [
        'connectors',
        'add',
        'gh-wrong',
        '--type',
        'github',
        '--client-id',
        github.clientId,
        '--client-secret-stdin',
        '--org',
        'acme',
        '--api-url',
        github.apiUrl,
      ];
      const refused = await runCli(args, env, 'not-the-secret');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        'latchkey: connector gh-wrong not added: GitHub refused the client (incorrect_client_credentials): check --client-id and the client secret',
      );
      expect(refused.stderr).toMatch(/ok +API: /);
    } finally {
      await github.close();
    }
  });
});

describe('connectors add refuses what would silently not work, and warns of what is open to everyone', () => {
  it('usage errors (exit 2) and warnings', async () => {
    const stdin = 'a-secret\n';
    const [reserved, trustGithub, orgOidc, noOpenid, ldapCredentials, clientIdLdap, google, githubEveryone] = await Promise.all([
      runCli(['connectors', 'add', 'local', '--type', 'oidc', '--issuer', 'https://sso.example.com', '--client-id', 'x'], env),
      runCli(['connectors', 'add', 'gh2', '--type', 'github', '--client-id', 'x', '--client-secret-stdin', '--trust-email'], env, stdin),
      runCli(['connectors', 'add', 'o2', '--type', 'oidc', '--issuer', 'https://sso.example.com', '--client-id', 'x', '--org', 'acme'], env),
      runCli(['connectors', 'add', 'o3', '--type', 'oidc', '--issuer', 'https://sso.example.com', '--client-id', 'x', '--scope', 'email profile'], env),
      runCli(
        [
          'connectors',
          'add',
          'l2',
          '--type',
          'ldap',
          '--url',
          'ldap://admin:secret@dc1.example:389',
          '--bind-dn',
          'cn=x',
          '--bind-password-stdin',
          '--user-base',
          'ou=people',
        ],
        env,
        stdin,
      ),
      runCli(
        [
          'connectors',
          'add',
          'l3',
          '--type',
          'ldap',
          '--url',
          'ldaps://dc1.example:636',
          '--client-id',
          'x',
          '--bind-dn',
          'cn=x',
          '--bind-password-stdin',
          '--user-base',
          'ou=people',
        ],
        env,
        stdin,
      ),
      runCli(
        ['connectors', 'add', 'google', '--type', 'oidc', '--issuer', 'https://accounts.google.com', '--client-id', 'x', '--client-secret-stdin', '--no-check'],
        env,
        stdin,
      ),
      runCli(['connectors', 'add', 'gh3', '--type', 'github', '--client-id', 'x', '--client-secret-stdin', '--no-check'], env, stdin),
    ]);
    expect(reserved).toMatchObject({ code: 2 });
    expect(reserved.stderr).toContain('reserved');
    expect(trustGithub).toMatchObject({ code: 2 });
    expect(trustGithub.stderr).toContain('--trust-email is for --type oidc only');
    expect(orgOidc).toMatchObject({ code: 2 });
    expect(orgOidc.stderr).toContain('--org is for --type github only');
    expect(noOpenid).toMatchObject({ code: 2 });
    expect(noOpenid.stderr).toContain('must include openid');
    expect(ldapCredentials).toMatchObject({ code: 2 });
    expect(ldapCredentials.stderr).not.toContain('secret');
    expect(clientIdLdap).toMatchObject({ code: 2 });
    expect(google).toMatchObject({ code: 0 });
    expect(google.stderr).toContain('anyone with an account at this issuer can sign in');
    expect(githubEveryone).toMatchObject({ code: 0 });
    expect(githubEveryone.stderr).toContain('without --org, anyone with a GitHub account can sign in');
    const listed = JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout) as Array<{ id: string }>;
    expect(listed.map((c) => c.id)).not.toContain('local');
    expect(listed.map((c) => c.id)).not.toContain('o3');
    await Promise.all([runCli(['connectors', 'remove', 'google'], env), runCli(['connectors', 'remove', 'gh3'], env)]);
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
      [
        'connectors',
        'add',
        'corp',
        '--type',
        'ldap',
        '--url',
        slapd!.url,
        '--bind-dn',
        directory.bindDn,
        '--bind-password-stdin',
        '--user-base',
        directory.userBase,
        '--group-base',
        directory.groupBase,
        '--start-tls',
      ],
      // The command checks the directory before saving it: it trusts the certificate as the server does.
      { ...env, NODE_EXTRA_CA_CERTS: slapd!.caFile },
      `${directory.bindPassword}\n`,
    );
    expect(added.code).toBe(0);
    expect(added.stdout).toBe('');
    expect(added.stderr).toMatch(/ok +service account bind: bound as cn=latchkey/);
    const person = new Browser(fetchTransport(server.base));
    const res = await signIn(person, await person.get('/login'), 'dora', directory.people.dora.password);
    expect(res.status).toBe(303);
    expect((await users()).find((u) => u.source === 'corp')).toMatchObject({ username: 'dora', groups: ['engineers', 'ops'] });

    const Database = (await import('better-sqlite3')).default;
    const db = new Database(env.LATCHKEY_DB, { readonly: true });
    const row = db.prepare("SELECT secret FROM connectors WHERE id = 'corp'").get() as { secret: string };
    db.close();
    expect(row.secret).toMatch(/^lk1\./);
    expect(row.secret).not.toContain(directory.bindPassword);
  });

  // What a terminal would run: ESC and the other C0 controls but the new lines of the output, DEL, C1.
  const rawControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

  it('an entry with terminal escapes in its displayName and CR LF in its mail: neither is stored, and users list and whoami print no raw control character, even of values stored before the check', async () => {
    const home = mkdtempSync(join(tmpdir(), 'latchkey-home-'));
    try {
      const cliEnv = { HOME: home, LATCHKEY_ISSUER: server.base };
      // The person runs `latchkey login` and signs in with the directory's password.
      const cli = spawnCli(['login', '--no-browser'], cliEnv);
      const [url] = await cli.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/authorize\?\S+/);
      const person = new Browser(fetchTransport(server.base));
      const authorization = new URL(url);
      const toLogin = await person.get(authorization.pathname + authorization.search);
      const signedIn = await signIn(person, await person.get(toLogin.location!), 'mallory', directory.people.mallory.password);
      expect(signedIn.status).toBe(303);
      let page = await person.get(signedIn.location!);
      if (page.status === 200)
        page = await person.post('/authorize/decision', {
          csrf_token: inputValue(page.body, 'csrf_token')!,
          interaction: inputValue(page.body, 'interaction')!,
          decision: 'allow',
        });
      expect(page.location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
      await fetch(page.location!);
      expect(await cli.exit).toBe(0);

      const mallory = (await users()).find((u) => u.username === 'mallory');
      expect(mallory).toMatchObject({ source: 'corp', email: '', name: null });
      const whoami = await runCli(['whoami', '--json'], cliEnv);
      expect(whoami.code, whoami.stderr).toBe(0);
      expect(JSON.parse(whoami.stdout)).not.toHaveProperty('email_verified', true);

      // A row written before upstream values were checked: the listings show, and do not run, it.
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(env.LATCHKEY_DB);
      db.prepare('UPDATE users SET name = ?, email = ? WHERE username = ?').run(directory.people.mallory.name, directory.people.mallory.mail, 'mallory');
      db.close();
      for (const args of [['users', 'list'], ['users', 'list', '--json'], ['whoami'], ['whoami', '--json']]) {
        const out = await runCli(args, args[0] === 'whoami' ? cliEnv : env);
        expect(out.code, out.stderr).toBe(0);
        expect(out.stdout, args.join(' ')).not.toMatch(rawControl);
        expect(out.stderr, args.join(' ')).not.toMatch(rawControl);
        if (!args.includes('--json')) expect(out.stdout).toContain('\\x1b[2J\\x1b[HMallory');
      }
      const listed = await runCli(['users', 'list'], env);
      expect(listed.stdout).toContain('mallory@example.org\\r\\nX-Injected: yes');
      expect(JSON.parse((await runCli(['whoami', '--json'], cliEnv)).stdout).name).toBe(directory.people.mallory.name);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('a StartTLS directory whose certificate is not trusted: connectors add refuses it, and added anyway, people are told it is not set up correctly', async () => {
    const untrusted = await startServerProcess({ LATCHKEY_DB: join(dir, 'untrusted.db'), LATCHKEY_UPSTREAM_TIMEOUT: '3' });
    try {
      const uenv = { LATCHKEY_DB: join(dir, 'untrusted.db') };
      const add = (extra: string[]) =>
        runCli(
          [
            'connectors',
            'add',
            'corp',
            '--type',
            'ldap',
            '--url',
            slapd!.url,
            '--bind-dn',
            directory.bindDn,
            '--bind-password-stdin',
            '--user-base',
            directory.userBase,
            '--start-tls',
            ...extra,
          ],
          uenv,
          directory.bindPassword,
        );
      const refused = await add([]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/connector corp not added: TLS with ldap:\/\/\S+ failed: the certificate .*not trusted \([A-Z_]+\)/);
      expect((await add(['--no-check'])).code).toBe(0);
      const person = new Browser(fetchTransport(untrusted.base));
      const res = await signIn(person, await person.get('/login'), 'dora', directory.people.dora.password);
      expect(res.status).toBe(502);
      expect(res.body).toContain('This sign-in method is not set up correctly; tell your administrator');
      const metrics = await (await fetch(`${untrusted.base}/metrics`)).text();
      expect(metrics).toMatch(/latchkey_upstream_signins_total\{connector="corp",outcome="misconfigured"\} 1/);
    } finally {
      await untrusted.stop();
    }
  });

  const ldapArgs = (id: string, url: string) => [
    'connectors',
    'add',
    id,
    '--type',
    'ldap',
    '--url',
    url,
    '--bind-dn',
    directory.bindDn,
    '--bind-password-stdin',
    '--user-base',
    directory.userBase,
  ];

  it('connectors add refuses a directory on a closed port, with the cause and the hint --no-check', async () => {
    const port = await freePort();
    const refused = await runCli(ldapArgs('dead', `ldap://127.0.0.1:${port}`), env, directory.bindPassword);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`latchkey: connector dead not added: cannot connect to ldap://127.0.0.1:${port}: connection refused`);
    expect(refused.stderr).toMatch(/FAILED +connection: cannot connect/);
    expect(refused.stderr).toContain('--no-check');
    expect(refused.stderr).not.toContain(directory.bindPassword);
    expect((await runCli(['connectors', 'test', 'dead'], env)).stderr).toContain('no connector "dead"');
  });

  it('connectors add refuses a bind password the directory refuses; --no-check adds it; connectors test then fails with the cause', async () => {
    const url = slapd!.url;
    const refused = await runCli(ldapArgs('wrongbind', url), env, 'not-the-bind-password\n');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "latchkey: connector wrongbind not added: the LDAP server refused the service account's bind (invalidCredentials, 0x31): check --bind-dn and the bind password",
    );
    expect(refused.stderr).toMatch(/ok +connection: /);
    expect(refused.stderr + refused.stdout).not.toContain('not-the-bind-password');
    let listed = JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout) as Array<{ id: string }>;
    expect(listed.map((c) => c.id)).not.toContain('wrongbind');

    const unchecked = await runCli([...ldapArgs('wrongbind', url), '--no-check'], env, 'not-the-bind-password\n');
    expect(unchecked.code).toBe(0);
    expect(unchecked.stderr).not.toContain('Checking');
    listed = JSON.parse((await runCli(['connectors', 'list', '--json'], env)).stdout) as Array<{ id: string }>;
    expect(listed.map((c) => c.id)).toContain('wrongbind');

    const tested = await runCli(['connectors', 'test', 'wrongbind'], env);
    expect(tested.code).toBe(1);
    expect(tested.stderr).toContain(
      "latchkey: connector wrongbind does not work: the LDAP server refused the service account's bind (invalidCredentials, 0x31): check --bind-dn and the bind password",
    );
    expect(tested.stdout).toMatch(/FAILED +service account bind: /);
    expect(tested.stdout + tested.stderr).not.toContain('not-the-bind-password');
    expect((await runCli(['connectors', 'remove', 'wrongbind'], env)).code).toBe(0);
  });

  it('connectors test on a directory that works: exit 0, each step said', async () => {
    const tested = await runCli(['connectors', 'test', 'corp'], { ...env, NODE_EXTRA_CA_CERTS: slapd!.caFile });
    expect(tested.code, tested.stderr).toBe(0);
    expect(tested.stdout).toMatch(/ok +connection: /);
    expect(tested.stdout).toMatch(/ok +StartTLS: /);
    expect(tested.stdout).toMatch(/ok +service account bind: bound as cn=latchkey,dc=example,dc=org/);
    expect(tested.stdout).toMatch(/ok +search of the user base: ou=people,dc=example,dc=org/);
    expect(tested.stdout).toMatch(/ok +search of the group base: /);
    expect(tested.stdout).toMatch(/not checked +person sign-in: /);
    expect(tested.stdout).toContain('Connector corp works');
  });
});
