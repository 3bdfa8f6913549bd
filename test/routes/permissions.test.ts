/**
 * API permissions and roles: what a person's roles allow decides which of an API's
 * scopes their tokens carry — at the consent and device pages, at issuance and at every refresh.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { addApi, addClient, addUser, form, testApp, type TestApp } from '../helpers/app.js';
import { refresh, tokensFor } from '../helpers/flows.js';
import type { UserRecord } from '../../src/store/store.js';
import { Browser, injectTransport, inputValue, signIn } from '../helpers/browser.js';
import { pkcePair } from '../helpers/app.js';

const reports = 'https://reports.example.com';
const billing = 'https://billing.example.com';
let t: TestApp;
let alice: UserRecord;
let nobody: UserRecord;

beforeEach(async () => {
  t = await testApp();
  await addApi(t.store, reports, 'Reports', [], ['read:reports', 'write:reports', 'delete:reports']);
  await addApi(t.store, billing, 'Billing', [], ['read:invoices']);
  await t.store.createRole({
    name: 'analyst',
    description: undefined,
    permissions: [
      { api: reports, scope: 'read:reports' },
      { api: billing, scope: 'read:invoices' },
    ],
    createdAt: 1_800_000_000,
  });
  await t.store.createRole({ name: 'editor', description: undefined, permissions: [{ api: reports, scope: 'write:reports' }], createdAt: 1_800_000_000 });
  alice = await addUser(t.store, 'alice', 'correct horse battery', { roles: ['analyst'] });
  alice = (await t.store.findUserById(alice.id))!;
  nobody = await addUser(t.store, 'nobody');
  await addClient(t.store, 'cli', { grantTypes: ['device_code', 'refresh_token'] });
});

afterEach(async () => {
  await t.close();
});

const everyScope = 'openid profile offline_access read:reports write:reports delete:reports';

describe('access tokens carry what the roles allow', () => {
  it('a person with one role gets just that permission of the API, and roles (RFC 9068 §2.2.3.1)', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: everyScope, audience: reports });
    expect(tokens.scope).toBe('openid profile offline_access read:reports');
    const claims = decodeJwt(tokens.access_token);
    expect(claims.scope).toBe('openid profile offline_access read:reports');
    expect(claims.aud).toBe(reports);
    expect(claims.roles).toEqual(['analyst']);
  });

  it('a person with no role asking for every scope gets only the OpenID Connect ones, and no roles claim', async () => {
    const tokens = await tokensFor(t, nobody, 'cli', { scope: everyScope, audience: reports });
    expect(tokens.scope).toBe('openid profile offline_access');
    const claims = decodeJwt(tokens.access_token);
    expect(claims.scope).toBe('openid profile offline_access');
    expect(claims.roles).toBeUndefined();
  });

  it('permissions are per API: a role for another API gives nothing here', async () => {
    await t.store.grantRole(nobody.id, 'editor', 1_800_000_000);
    const person = (await t.store.findUserById(nobody.id))!;
    const tokens = await tokensFor(t, person, 'cli', { scope: 'openid read:invoices', audience: billing });
    expect(tokens.scope).toBe('openid');
    expect(decodeJwt(tokens.access_token).roles).toEqual(['editor']);
  });

  it('roles add up', async () => {
    await t.store.grantRole(alice.id, 'editor', 1_800_000_000);
    const person = (await t.store.findUserById(alice.id))!;
    const tokens = await tokensFor(t, person, 'cli', { scope: everyScope, audience: reports });
    expect(tokens.scope).toBe('openid profile offline_access read:reports write:reports');
    expect(decodeJwt(tokens.access_token).roles).toEqual(['analyst', 'editor']);
  });

  it('a scope the API stopped declaring is no longer issued, whatever the role says', async () => {
    const api = (await t.store.findApi(reports))!;
    await t.store.updateApi({ ...api, scopes: ['write:reports'] });
    const device = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      ...form({ client_id: 'cli', scope: 'openid read:reports', audience: reports }),
    });
    expect(device.statusCode).toBe(400);
    expect(device.json().error).toBe('invalid_scope');
  });

  it('a scope the API stops declaring leaves the next refreshed token', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: everyScope, audience: reports });
    expect(tokens.scope).toContain('read:reports');
    const api = (await t.store.findApi(reports))!;
    await t.store.updateApi({ ...api, scopes: ['write:reports', 'delete:reports'] });
    const refreshed = await refresh(t, 'cli', tokens.refresh_token!);
    expect(refreshed.json().scope).toBe('openid profile offline_access');
  });

  it('roles are told only to an API, not in a token for the userinfo endpoint', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: 'openid' });
    expect(decodeJwt(tokens.access_token).roles).toBeUndefined();
  });

  it('asking only for API scopes the roles do not allow gets no token: the page says so and the device is told no', async () => {
    const device = (
      await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form({ client_id: 'cli', scope: 'write:reports', audience: reports }) })
    ).json();
    const browser = new Browser(injectTransport(t.app));
    const entry = await browser.get(new URL(device.verification_uri_complete).pathname + new URL(device.verification_uri_complete).search);
    let page = await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: inputValue(entry.body, 'user_code')! });
    page = await browser.follow(page);
    page = await browser.follow(await signIn(browser, page, 'alice', 'correct horse battery'));
    expect(page.status).toBe(403);
    expect(page.body).toContain('no permission');
    expect(page.body).not.toContain('name="decision"');
  });

  it('at /authorize, asking only for API scopes the roles do not allow is access_denied, with no consent page and no code', async () => {
    await addClient(t.store, 'web', { name: 'Web App', grantTypes: ['authorization_code'], redirectUris: ['https://web.example.com/cb'] });
    const browser = new Browser(injectTransport(t.app));
    const { challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://web.example.com/cb',
      scope: 'write:reports',
      audience: reports,
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    let page = await browser.follow(await browser.get(`/authorize?${query}`));
    page = await signIn(browser, page, 'alice', 'correct horse battery');
    const answer = await browser.get(page.location!);
    expect(answer.status).toBe(302);
    const back = new URL(answer.location!);
    expect(back.origin + back.pathname).toBe('https://web.example.com/cb');
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('code')).toBeNull();
    expect(back.searchParams.get('state')).toBe('st');
  });

  it('a scope no API declares, or an API scope without its audience, is invalid_scope', async () => {
    for (const fields of [
      { client_id: 'cli', scope: 'openid admin:everything', audience: reports } as Record<string, string>,
      { client_id: 'cli', scope: 'openid read:reports' },
      { client_id: 'cli', scope: 'openid read:reports', audience: billing },
    ]) {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', ...form(fields) });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_scope');
    }
  });

  it('a refresh after the role was taken away carries less; a role given later does not widen an old grant', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: everyScope, audience: reports });
    expect(tokens.scope).toContain('read:reports');
    expect(await t.store.revokeRole(alice.id, 'analyst')).toBe(true);
    const first = await refresh(t, 'cli', tokens.refresh_token!);
    expect(first.statusCode).toBe(200);
    expect(first.json().scope).toBe('openid profile offline_access');
    expect(decodeJwt(first.json().access_token).roles).toBeUndefined();

    await t.store.grantRole(alice.id, 'analyst', 1_800_000_000);
    await t.store.grantRole(alice.id, 'editor', 1_800_000_000);
    const second = await refresh(t, 'cli', first.json().refresh_token);
    expect(second.statusCode).toBe(200);
    // The grant was made for read:reports only (write was not allowed then): never more than that.
    expect(second.json().scope).toBe('openid profile offline_access read:reports');
    expect(decodeJwt(second.json().access_token).roles).toEqual(['analyst', 'editor']);
  });

  it('a refresh may narrow to a permitted scope but not ask for an unpermitted one', async () => {
    const tokens = await tokensFor(t, alice, 'cli', { scope: everyScope, audience: reports });
    const narrowed = await refresh(t, 'cli', tokens.refresh_token!, { scope: 'openid read:reports' });
    expect(narrowed.statusCode).toBe(200);
    expect(narrowed.json().scope).toBe('openid read:reports');
    const wider = await refresh(t, 'cli', narrowed.json().refresh_token, { scope: 'openid write:reports' });
    expect(wider.statusCode).toBe(400);
    expect(wider.json().error).toBe('invalid_scope');
  });
});

describe('the pages ask only for what the person can give', () => {
  it('the consent page lists only the permitted API scopes, and the code carries just those', async () => {
    await addClient(t.store, 'web', { name: 'Web App', grantTypes: ['authorization_code', 'refresh_token'], redirectUris: ['https://web.example.com/cb'] });
    const browser = new Browser(injectTransport(t.app));
    const { verifier, challenge } = pkcePair();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'https://web.example.com/cb',
      scope: 'openid read:reports write:reports delete:reports',
      audience: reports,
      state: 'st',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    let page = await browser.get(`/authorize?${query}`);
    page = await browser.follow(page);
    page = await browser.follow(await signIn(browser, page, 'alice', 'correct horse battery'));
    page = await browser.follow(page);
    expect(page.status).toBe(200);
    expect(page.body).toContain('read:reports');
    expect(page.body).not.toContain('write:reports');
    expect(page.body).not.toContain('delete:reports');
    const answer = await browser.post('/authorize/decision', {
      csrf_token: inputValue(page.body, 'csrf_token')!,
      interaction: inputValue(page.body, 'interaction')!,
      decision: 'allow',
    });
    const code = new URL(answer.location!).searchParams.get('code')!;
    expect((await t.store.findConsent(alice.id, 'web', reports))?.scope).toBe('openid read:reports');
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      ...form({ grant_type: 'authorization_code', code, client_id: 'web', redirect_uri: 'https://web.example.com/cb', code_verifier: verifier }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().scope).toBe('openid read:reports');
  });

  it('the device confirmation page lists only the permitted API scopes', async () => {
    const device = (
      await t.app.inject({
        method: 'POST',
        url: '/oauth/device/code',
        ...form({ client_id: 'cli', scope: 'openid read:reports write:reports', audience: reports }),
      })
    ).json();
    const browser = new Browser(injectTransport(t.app));
    const entry = await browser.get(new URL(device.verification_uri_complete).pathname + new URL(device.verification_uri_complete).search);
    let page = await browser.post('/activate', { csrf_token: inputValue(entry.body, 'csrf_token')!, user_code: inputValue(entry.body, 'user_code')! });
    page = await browser.follow(page);
    page = await browser.follow(await signIn(browser, page, 'alice', 'correct horse battery'));
    expect(page.body).toContain('name="decision"');
    expect(page.body).toContain('read:reports');
    expect(page.body).not.toContain('write:reports');
  });
});
