/**
 * A linked upstream identity end to end, as an operator and a person meet it: the built `latchkey`
 * executable adds a --trust-email connector (a stand-in OpenID provider on a real socket) and a
 * local account of the same verified email to a running `latchkey serve`; the person's upstream
 * account signs in and is linked to that account; `users list --json` shows the link under
 * `identities`; `latchkey users unlink` removes it — and the upstream account can no longer sign
 * in as that user (nor be linked again by its email, nor get an account of its own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, decodeEntities, fetchTransport, inputValue, signIn, type BrowserResponse } from '../helpers/browser.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';
import { startFakeOidcProvider, type FakeOidcProvider } from '../helpers/upstreams.js';

let dir: string;
let env: Record<string, string>;
let server: ServerProcess;
let idp: FakeOidcProvider;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-linked-'));
  idp = await startFakeOidcProvider({
    sub: 'upstream-sub-1',
    email: 'alice@example.com',
    email_verified: true,
    name: 'Alice Upstream',
    preferred_username: 'alice-up',
  });
  env = { LATCHKEY_DB: join(dir, 'latchkey.db'), LATCHKEY_UPSTREAM_TIMEOUT: '5' };
  server = await startServerProcess(env);
  env.LATCHKEY_ISSUER = server.base;
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await idp?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface ListedUser {
  username: string;
  source: string;
  identities: Array<{ connector: string; subject: string }>;
}

async function listed(): Promise<ListedUser[]> {
  const result = await runCli(['users', 'list', '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ListedUser[];
}

/** "Sign in with Acme SSO" in a fresh browser, through the stand-in upstream: the callback's answer and the browser. */
async function signInUpstream(): Promise<{ answer: BrowserResponse; browser: Browser }> {
  const browser = new Browser(fetchTransport(server.base));
  const login = await browser.get('/login?return_to=%2Faccount');
  expect(login.body).toContain('value="acme"');
  const start = await browser.post('/login/connector', {
    csrf_token: inputValue(login.body, 'csrf_token')!,
    return_to: inputValue(login.body, 'return_to')!,
    connector: 'acme',
  });
  const to = start.body.match(/<meta http-equiv="refresh" content="0;url=([^"]+)">/)?.[1];
  expect(to, start.body.slice(0, 300)).toBeDefined();
  const upstream = await fetch(decodeEntities(to!), { redirect: 'manual' });
  const callback = new URL(upstream.headers.get('location')!);
  return { answer: await browser.get(callback.pathname + callback.search), browser };
}

describe('latchkey users unlink <username> <connector>', () => {
  it('an email link is listed by users list --json; unlinking it ends its sign-ins and the upstream account can no longer sign in as that user', async () => {
    const connector = await runCli(
      [
        'connectors',
        'add',
        'acme',
        '--type',
        'oidc',
        '--issuer',
        idp.base,
        '--client-id',
        idp.clientId,
        '--client-secret-stdin',
        '--name',
        'Acme SSO',
        '--trust-email',
      ],
      env,
      `${idp.clientSecret}\n`,
    );
    expect(connector.code, connector.stderr).toBe(0);
    expect((await runCli(['users', 'add', 'alice', '--email', 'alice@example.com', '--password-stdin'], env, 'alice-password')).code).toBe(0);
    expect((await runCli(['users', 'add', 'bob', '--email', 'bob@example.com', '--password-stdin'], env, 'bob-password')).code).toBe(0);

    // The upstream account asserts alice's address, verified: linked to her account.
    const first = await signInUpstream();
    expect(first.answer.status).toBe(303);
    expect((await first.browser.get('/account')).status).toBe(200);
    let users = await listed();
    expect(users.find((u) => u.username === 'alice')).toMatchObject({ source: 'local', identities: [{ connector: 'acme', subject: 'upstream-sub-1' }] });
    expect(users.find((u) => u.username === 'bob')?.identities).toEqual([]);
    expect(users.some((u) => u.username === 'alice-up')).toBe(false);
    const table = (await runCli(['users', 'list'], env)).stdout;
    expect(table.split('\n')[0]).toMatch(/\bLINKED$/);
    expect(table).toMatch(/^alice\s.*\sacme$/m);
    expect(table).toMatch(/^bob\s.*\s-$/m);
    // The person also sees it on their account page.
    expect((await first.browser.get('/account')).body).toContain('<strong>Acme SSO</strong>');

    const unlinked = await runCli(['users', 'unlink', 'alice', 'acme'], env);
    expect(unlinked.code, unlinked.stderr).toBe(0);
    expect(unlinked.stderr).toContain('Unlinked acme from alice: that upstream account can no longer sign in here, and every sign-in of theirs has ended');
    const auditLine = unlinked.stderr.split('\n').find((l) => l.includes('"event":"user.identity_unlinked"'));
    expect(JSON.parse(auditLine!)).toMatchObject({ source: 'cli', username: 'alice', connectorId: 'acme', subjects: ['upstream-sub-1'] });
    // alice keeps her password: no warning.
    expect(unlinked.stderr).not.toContain('no way to sign in');

    // The browser that came in through it is signed out; the upstream account is refused, with nothing made.
    expect((await first.browser.get('/account')).status).toBe(303);
    const again = await signInUpstream();
    expect(again.answer.status).toBe(403);
    expect(decodeEntities(again.answer.body)).toContain('Signing in this way was removed from your account.');
    users = await listed();
    expect(users.find((u) => u.username === 'alice')?.identities).toEqual([]);
    expect(users.map((u) => u.username).sort()).toEqual(['admin', 'alice', 'bob']);
    // Her password still signs her in.
    const person = new Browser(fetchTransport(server.base));
    expect((await signIn(person, await person.get('/login?return_to=%2Faccount'), 'alice', 'alice-password')).status).toBe(303);
  });

  it('clear errors, non-zero exit: an unknown user, an unknown connector, no such link, a missing argument', async () => {
    const noUser = await runCli(['users', 'unlink', 'nobody', 'acme'], env);
    expect(noUser.code).toBe(1);
    expect(noUser.stderr).toContain('no user "nobody"');
    const noConnector = await runCli(['users', 'unlink', 'alice', 'nope'], env);
    expect(noConnector.code).toBe(1);
    expect(noConnector.stderr).toContain('no connector "nope"');
    const noLink = await runCli(['users', 'unlink', 'bob', 'acme'], env);
    expect(noLink.code).toBe(1);
    expect(noLink.stderr).toContain('bob has no identity linked at "acme"');
    const usage = await runCli(['users', 'unlink', 'alice'], env);
    expect(usage.code).toBe(2);
    const help = await runCli(['users', '--help'], env);
    expect(help.stdout + help.stderr).toContain('unlink');
  });

  it('an operator may take the last way in of an account the upstream made, and is told so', async () => {
    idp.behaviour.person = { sub: 'upstream-quinn', email: 'quinn@upstream.example', email_verified: true, preferred_username: 'quinn' };
    expect((await signInUpstream()).answer.status).toBe(303);
    expect((await listed()).find((u) => u.username === 'quinn')).toMatchObject({
      source: 'acme',
      identities: [{ connector: 'acme', subject: 'upstream-quinn' }],
    });
    const unlinked = await runCli(['users', 'unlink', 'quinn', 'acme'], env);
    expect(unlinked.code, unlinked.stderr).toBe(0);
    expect(unlinked.stderr).toContain('warning: quinn now has no way to sign in (no password, passkey or other linked identity)');
    expect((await signInUpstream()).answer.status).toBe(403);
  });
});
