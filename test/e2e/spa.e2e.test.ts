/// <reference lib="dom" />
/**
 * A single-page application in a real browser: oidc-client-ts (its browser bundle, served from
 * node_modules) in a page served from another origin than the issuer's — the issuer on
 * http://localhost:<port>, the application on http://127.0.0.1:<port>, a plain node:http server —
 * in Debian's Chromium driven by playwright-core. From its registered web origin it signs in with
 * PKCE (a redirect), calls userinfo, refreshes, and signs out (revoking its tokens on the way);
 * the very same application served from an origin that is not registered is refused by the
 * browser itself, CORS failing on the token endpoint, and no token reaches the page. A DPoP token
 * request made in the page with a WebCrypto key shows that proofs made by browser code are
 * accepted and that the nonce challenge is readable.
 *
 * Chromium must be at /usr/bin/chromium (.ci/run installs it). Without it these tests are skipped
 * on a developer machine, but CI sets LATCHKEY_REQUIRE_BROWSER=1, so there they can only pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { calculateJwkThumbprint, decodeJwt, type JWK } from 'jose';
import { addClient, addUser, testApp, type TestApp } from '../helpers/app.js';
import { refresh } from '../helpers/flows.js';
import { freePort } from '../helpers/process.js';
import { refreshTokenKey } from '../../src/oauth/refresh_tokens.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';
const oidcClientBundle = readFileSync(
  join(dirname(createRequire(import.meta.url).resolve('oidc-client-ts/package.json')), 'dist', 'browser', 'oidc-client-ts.min.js'),
  'utf8',
);

const clientId = 'photos-web';
let t: TestApp;
let issuer: string;
let registeredOrigin: string;
let strangerOrigin: string;
let dir: string;
let browser: Browser;
const servers: Server[] = [];

/** The application: one page, the library, and a few lines of its own, as a real SPA would have. */
function applicationScript(): string {
  return `
const ISSUER = ${JSON.stringify(issuer)};
const manager = new oidc.UserManager({
  authority: ISSUER,
  client_id: ${JSON.stringify(clientId)},
  redirect_uri: location.origin + '/callback',
  post_logout_redirect_uri: location.origin + '/signed-out',
  response_type: 'code',
  scope: 'openid email profile offline_access',
  loadUserInfo: false,
  automaticSilentRenew: false,
  revokeTokensOnSignout: true,
});
const show = (text) => { document.getElementById('status').textContent = text; };
window.app = {
  manager,
  async userinfo() {
    const user = await manager.getUser();
    const res = await fetch(ISSUER + '/userinfo', { headers: { authorization: 'Bearer ' + user.access_token } });
    return { status: res.status, body: await res.json() };
  },
};
document.getElementById('sign-in').addEventListener('click', () => manager.signinRedirect().catch((e) => show('error: ' + e.message)));
document.getElementById('sign-out').addEventListener('click', () => manager.signoutRedirect().catch((e) => show('error: ' + e.message)));
if (location.pathname === '/callback') {
  manager.signinRedirectCallback().then((user) => show('signed in: ' + user.profile.sub), (e) => show('error: ' + e.message));
} else if (location.pathname === '/signed-out') {
  show('signed out');
} else {
  show('ready');
}
`;
}

const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Photo Editor</title></head>
<body><h1>Photo Editor</h1><p id="status">loading</p>
<button id="sign-in">Sign in</button> <button id="sign-out">Sign out</button>
<script src="/oidc-client-ts.min.js"></script><script src="/app.js"></script></body></html>`;

/** Serves the application on a port of its own: its origin is http://127.0.0.1:<port>. */
async function serveApplication(): Promise<string> {
  const port = await freePort();
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://app').pathname;
    if (path === '/oidc-client-ts.min.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(oidcClientBundle);
    else if (path === '/app.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(applicationScript());
    else response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${port}`;
}

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-spa-'));
  const port = await freePort();
  issuer = `http://localhost:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: issuer }, { path: join(dir, 'latchkey.db') });
  await t.app.listen({ port, host: '127.0.0.1' });
  await addUser(t.store, 'erin', 'erin-password');
  registeredOrigin = await serveApplication();
  strangerOrigin = await serveApplication();
  await addClient(t.store, clientId, {
    name: 'Photo Editor',
    grantTypes: ['authorization_code', 'refresh_token'],
    redirectUris: [`${registeredOrigin}/callback`],
    postLogoutRedirectUris: [`${registeredOrigin}/signed-out`],
    webOrigins: [registeredOrigin],
  });
  browser = await chromium.launch({
    executablePath,
    // localhost is the issuer's host, served on IPv4 only.
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--host-resolver-rules=MAP localhost 127.0.0.1'],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  for (const server of servers) server.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Opened {
  context: BrowserContext;
  page: Page;
  /** Every request the page made, as method and URL. */
  requests: string[];
  /** What the browser wrote to the page's console (CORS refusals among them). */
  consoleText: string[];
}

/** A fresh browser (no cookies) whose clock reads the server's time, at the application's page. */
async function openApplication(origin: string): Promise<Opened> {
  const context = await browser.newContext();
  // The server runs on the test's fixed clock: the page's Date.now() (DPoP proofs' iat) reads the same.
  await context.clock.setFixedTime(new Date(Math.floor(t.clock()) * 1000));
  const opened = await context.newPage();
  const requests: string[] = [];
  const consoleText: string[] = [];
  opened.on('request', (request) => requests.push(`${request.method()} ${request.url()}`));
  opened.on('console', (message: ConsoleMessage) => consoleText.push(message.text()));
  await opened.goto(`${origin}/`);
  await expect.poll(() => opened.locator('#status').textContent()).toBe('ready');
  return { context, page: opened, requests, consoleText };
}

/** The person's part: Sign in in the application, then at the issuer, allowing it if asked; back at the application. */
async function signInThroughTheApplication({ page }: Opened, origin: string): Promise<void> {
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => url.origin === issuer && url.pathname === '/login');
  await page.getByLabel('Username').fill('erin');
  await page.getByLabel('Password').fill('erin-password');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  // Consent the first time (or the loopback confirmation of RFC 8252 §8.6): allowed once.
  const back = page.waitForURL((url) => url.origin === origin);
  const decision = page.getByRole('button', { name: /^(Allow|Continue)$/ });
  await Promise.race([back, decision.waitFor()]);
  if (new URL(page.url()).origin !== origin) await decision.click();
  await back;
}

describe.skipIf(!run)('a single-page application (oidc-client-ts) in Chromium', () => {
  it('from its registered web origin: signs in with PKCE, calls userinfo, refreshes, and signs out revoking its tokens', async () => {
    const opened = await openApplication(registeredOrigin);
    const { context, page: app } = opened;
    await signInThroughTheApplication(opened, registeredOrigin);
    const erin = (await t.store.findUserByUsername('erin'))!;
    await expect.poll(() => app.locator('#status').textContent()).toBe(`signed in: ${erin.id}`);
    const signedIn = await app.evaluate(async () => {
      const user = await (window as unknown as { app: SpaApp }).app.manager.getUser();
      return { access: user?.access_token, refresh: user?.refresh_token, scope: user?.scope };
    });
    expect(signedIn.refresh).toMatch(/^lk_rt_/);
    expect(decodeJwt(signedIn.access!)).toMatchObject({ client_id: clientId, sub: erin.id });
    // PKCE: the authorization request the library made carried an S256 challenge.
    const authorize = opened.requests.find((r) => r.startsWith(`GET ${issuer}/authorize?`));
    expect(new URL(authorize!.slice(4)).searchParams.get('code_challenge_method')).toBe('S256');

    const userinfo = await app.evaluate(() => (window as unknown as { app: SpaApp }).app.userinfo());
    expect(userinfo).toMatchObject({ status: 200, body: { sub: erin.id, email: 'erin@example.com' } });

    const refreshed = await app.evaluate(async () => {
      const user = await (window as unknown as { app: SpaApp }).app.manager.signinSilent();
      return { access: user?.access_token, refresh: user?.refresh_token };
    });
    expect(refreshed.refresh).toMatch(/^lk_rt_/);
    expect(refreshed.refresh).not.toBe(signedIn.refresh);
    expect(refreshed.access).not.toBe(signedIn.access);
    // Rotated: the first refresh token is spent, its successor in the same family.
    const first = await t.store.findRefreshToken(refreshTokenKey(signedIn.refresh!));
    expect(first?.rotatedAt).toBeDefined();
    expect((await t.store.findRefreshToken(refreshTokenKey(refreshed.refresh!)))?.familyId).toBe(first?.familyId);

    await app.getByRole('button', { name: 'Sign out' }).click();
    await app.waitForURL((url) => url.origin === registeredOrigin && url.pathname === '/signed-out');
    await expect.poll(() => app.locator('#status').textContent()).toBe('signed out');
    // The library revoked the tokens through /oauth/revoke (cross-origin), then ended the session.
    expect(opened.requests.filter((r) => r === `POST ${issuer}/oauth/revoke`).length).toBeGreaterThan(0);
    expect((await refresh(t, clientId, refreshed.refresh!)).json()).toMatchObject({ error: 'invalid_grant' });
    const account = await context.request.get(`${issuer}/account`, { maxRedirects: 0 });
    expect(account.status()).toBe(303);
    expect(opened.consoleText.filter((text) => /CORS/.test(text))).toEqual([]);
    await context.close();
  });

  it('from an origin that is not registered: the browser refuses the token answer (CORS), and no token reaches the page', async () => {
    const opened = await openApplication(strangerOrigin);
    const { context, page: app } = opened;
    // Discovery is public, so the sign-in starts; the loopback redirect URI matches on any port.
    await signInThroughTheApplication(opened, strangerOrigin);
    await expect.poll(() => app.locator('#status').textContent()).toMatch(/^error: /);
    expect(await app.locator('#status').textContent()).toContain('Failed to fetch');
    await expect.poll(() => opened.consoleText.some((text) => text.includes('blocked by CORS policy'))).toBe(true);
    expect(opened.consoleText.find((text) => text.includes('blocked by CORS policy'))).toContain(`from origin '${strangerOrigin}'`);
    // The page holds no token and never used one.
    expect(await app.evaluate(async () => (await (window as unknown as { app: SpaApp }).app.manager.getUser()) === null)).toBe(true);
    expect(opened.requests.some((r) => r.includes('/userinfo'))).toBe(false);
    expect(opened.requests).toContain(`POST ${issuer}/oauth/token`);
    await context.close();
  });

  it('DPoP from the page: a WebCrypto ES256 key signs the proofs, the nonce challenge is read, and the tokens are bound to that key', async () => {
    const opened = await openApplication(registeredOrigin);
    const { context, page: app } = opened;
    await signInThroughTheApplication(opened, registeredOrigin);
    await expect.poll(() => app.locator('#status').textContent()).toMatch(/^signed in: /);
    const result = await app.evaluate(
      async ({ issuer: iss, clientId: id }) => {
        const user = await (window as unknown as { app: SpaApp }).app.manager.getUser();
        // A key the page can sign with but never read (extractable: false).
        const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
        const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', keys.publicKey);
        const jwk = { kty, crv, x, y };
        const base64url = (bytes: Uint8Array) =>
          btoa(String.fromCharCode(...bytes))
            .replace(/\+/g, '-')
            .replace(/\//g, '_')
            .replace(/=+$/, '');
        const part = (value: object) => base64url(new TextEncoder().encode(JSON.stringify(value)));
        const proof = async (htm: string, htu: string, extra: Record<string, string> = {}) => {
          const input = `${part({ typ: 'dpop+jwt', alg: 'ES256', jwk })}.${part({ jti: crypto.randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...extra })}`;
          const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, keys.privateKey, new TextEncoder().encode(input));
          return `${input}.${base64url(new Uint8Array(signature))}`;
        };
        const tokenUrl = `${iss}/oauth/token`;
        const body = new URLSearchParams({ grant_type: 'refresh_token', client_id: id, refresh_token: user?.refresh_token ?? '' });
        const first = await fetch(tokenUrl, { method: 'POST', headers: { dpop: await proof('POST', tokenUrl) }, body });
        const challenge = { status: first.status, body: (await first.json()) as unknown, nonce: first.headers.get('dpop-nonce') ?? '' };
        const second = await fetch(tokenUrl, { method: 'POST', headers: { dpop: await proof('POST', tokenUrl, { nonce: challenge.nonce }) }, body });
        const tokens = (await second.json()) as { token_type: string; access_token: string; refresh_token: string };
        const ath = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(tokens.access_token))));
        const userinfo = await fetch(`${iss}/userinfo`, {
          headers: { authorization: `DPoP ${tokens.access_token}`, dpop: await proof('GET', `${iss}/userinfo`, { ath }) },
        });
        return {
          extractable: keys.privateKey.extractable,
          jwk,
          challenge,
          status: second.status,
          tokens,
          userinfo: { status: userinfo.status, body: (await userinfo.json()) as unknown },
        };
      },
      { issuer, clientId },
    );
    expect(result.extractable).toBe(false);
    // The first proof had no nonce: the challenge and its DPoP-Nonce header were readable cross-origin.
    expect(result.challenge).toMatchObject({ status: 400, body: { error: 'use_dpop_nonce' } });
    expect(result.challenge.nonce).not.toBe('');
    expect(result.status).toBe(200);
    expect(result.tokens.token_type).toBe('DPoP');
    expect(decodeJwt(result.tokens.access_token).cnf).toEqual({ jkt: await calculateJwkThumbprint(result.jwk as JWK) });
    const erin = (await t.store.findUserByUsername('erin'))!;
    expect(result.userinfo).toMatchObject({ status: 200, body: { sub: erin.id } });
    // The refresh token is bound to the page's key now: without a proof by it, it is refused.
    expect((await refresh(t, clientId, result.tokens.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    await context.close();
  });
});

/** What the application's script puts on window (see applicationScript). */
interface SpaApp {
  manager: {
    getUser(): Promise<{ access_token: string; refresh_token?: string; scope?: string } | null>;
    signinSilent(): Promise<{ access_token: string; refresh_token?: string } | null>;
  };
  userinfo(): Promise<{ status: number; body: unknown }>;
}
