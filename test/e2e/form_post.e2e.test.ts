/// <reference lib="dom" />
/**
 * response_mode=form_post (OAuth 2.0 Form Post Response Mode) as a web RP such as Apache's
 * mod_auth_openidc uses it: real Chromium signs in and consents, the answer page posts itself to
 * the RP's redirect URI under a Content-Security-Policy that allows only that page's script, and
 * the RP redeems the posted code with its secret. Errors come back the same way.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/process.js';

const executablePath = '/usr/bin/chromium';
const run = existsSync(executablePath) || process.env.LATCHKEY_REQUIRE_BROWSER === '1';

let t: TestApp;
let base: string;
let dir: string;
let browser: Browser;
let rp: Server;
let rpPort: number;
let secret: string;
const posts: { method: string; url: string; contentType: string; body: string }[] = [];
const cspViolations: string[] = [];

beforeAll(async () => {
  if (!run) return;
  dir = mkdtempSync(join(tmpdir(), 'latchkey-form-post-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await testApp({ LATCHKEY_ISSUER: base }, { path: join(dir, 'latchkey.db') });
  await addUser(t.store, 'erin', 'erin-password');
  rpPort = await freePort();
  secret = (
    await addClient(t.store, 'wiki', {
      name: 'Team Wiki',
      confidential: true,
      redirectUris: [`http://127.0.0.1:${rpPort}/redirect_uri`],
      grantTypes: ['authorization_code'],
      requirePkce: false,
    })
  ).secret!;
  await t.app.listen({ port, host: '127.0.0.1' });
  // The RP: like mod_auth_openidc, it reads the posted form at its redirect URI.
  rp = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer | string) => (body += chunk.toString()));
    req.on('end', () => {
      // What reaches the redirect URI (not the browser's own favicon request).
      if (req.url?.startsWith('/redirect_uri'))
        posts.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'] ?? '', body });
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Team Wiki</title><h1>Team Wiki</h1>');
    });
  }).listen(rpPort, '127.0.0.1');
  browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}, 60_000);

afterAll(async () => {
  if (!run) return;
  await browser?.close();
  rp?.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!run)('response_mode=form_post in Chromium', () => {
  it('the answer page posts code, state and iss to the redirect URI, running only its own script; the RP redeems the code', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    const query = new URLSearchParams({
      response_type: 'code',
      response_mode: 'form_post',
      client_id: 'wiki',
      redirect_uri: `http://127.0.0.1:${rpPort}/redirect_uri`,
      scope: 'openid profile',
      state: 'st-form',
      nonce: 'n-form',
    });
    await page.goto(`${base}/authorize?${query}`);
    await page.getByLabel('Username').fill('erin');
    await page.getByLabel('Password').fill('erin-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // A loopback redirect: one click to confirm (or the consent page for a third-party app).
    await page.getByRole('button', { name: /Allow|Continue/ }).click();
    await page.getByRole('heading', { name: 'Team Wiki' }).waitFor();
    await context.close();

    expect(cspViolations).toEqual([]);
    expect(posts).toHaveLength(1);
    const posted = posts[0]!;
    expect(posted).toMatchObject({ method: 'POST', url: '/redirect_uri', contentType: 'application/x-www-form-urlencoded' });
    const fields = new URLSearchParams(posted.body);
    expect(fields.get('state')).toBe('st-form');
    expect(fields.get('iss')).toBe(base);
    const code = fields.get('code');
    expect(code).toMatch(/^lk_ac_/);

    const redeemed = await fetch(`${base}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`wiki:${secret}`).toString('base64')}` },
      body: form({ grant_type: 'authorization_code', code: code!, redirect_uri: `http://127.0.0.1:${rpPort}/redirect_uri` }).payload,
    });
    expect(redeemed.status).toBe(200);
    expect(((await redeemed.json()) as { id_token?: string }).id_token).toBeTruthy();
  });

  it('an error goes back the same way: a posted form with error and state, and no code', async () => {
    posts.length = 0;
    const context = await browser.newContext();
    const page = await context.newPage();
    const query = new URLSearchParams({
      response_type: 'code',
      response_mode: 'form_post',
      client_id: 'wiki',
      redirect_uri: `http://127.0.0.1:${rpPort}/redirect_uri`,
      scope: 'openid no-such-scope',
      state: 'st-err',
    });
    await page.goto(`${base}/authorize?${query}`);
    await page.getByRole('heading', { name: 'Team Wiki' }).waitFor();
    await context.close();
    expect(posts).toHaveLength(1);
    const fields = new URLSearchParams(posts[0]!.body);
    expect(posts[0]!.method).toBe('POST');
    expect(fields.get('error')).toBe('invalid_scope');
    expect(fields.get('state')).toBe('st-err');
    expect(fields.get('code')).toBeNull();
  });
});
