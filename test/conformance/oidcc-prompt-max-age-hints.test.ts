/**
 * Basic OP plan, how the request shapes the sign-in: oidcc-display-page, oidcc-display-popup,
 * oidcc-prompt-login, oidcc-prompt-none-not-logged-in, oidcc-prompt-none-logged-in,
 * oidcc-max-age-1, oidcc-max-age-10000, oidcc-id-token-hint, oidcc-login-hint, oidcc-ui-locales,
 * oidcc-claims-locales, oidcc-ensure-request-with-acr-values-succeeds.
 *
 * The suite sleeps between two authorizations (1 s for prompt=login, 2 s for max_age=1); the
 * server's clock is advanced instead. Where the suite asks the tester for a screenshot of the
 * second sign-in page, the test asserts that the sign-in page was shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationRequest, codeFlow, discoveryUrl, expectAuthorizationError, issuer, opFetch, startOp, Tester, type Op } from './suite.js';

let op: Op;
beforeAll(async () => {
  op = await startOp();
});
afterAll(async () => {
  await op?.close();
});

describe('oidcc-display-page', () => {
  it('display=page is accepted: the sign-in page, then a code', async () => {
    const { outcome } = await codeFlow(op, new Tester(op), { extras: { display: 'page' } });
    expect(outcome.pages[0]).toBe('login');
  });
});

describe('oidcc-display-popup', () => {
  it('display=popup is accepted: the sign-in page, then a code', async () => {
    const { outcome } = await codeFlow(op, new Tester(op), { extras: { display: 'popup' } });
    expect(outcome.pages[0]).toBe('login');
  });
});

describe('oidcc-prompt-login', () => {
  it('the second authorization with prompt=login shows the sign-in page again and auth_time moves on', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    op.t.clock.advance(1); // WaitForOneSecond
    const second = await codeFlow(op, tester, { extras: { prompt: 'login' } });
    // ExpectSecondLoginPage (the screenshot): the sign-in page, although the browser was signed in.
    expect(second.outcome.pages[0]).toBe('login');
    // CheckSecondIdTokenAuthTimeIsLaterIfPresent.
    expect(second.tokens.claims.auth_time as number).toBeGreaterThan(first.tokens.claims.auth_time as number);
  });
});

describe('oidcc-prompt-none-not-logged-in', () => {
  it('prompt=none without a session: a login_required redirect with the 128-character state, no page, no code', async () => {
    const request = authorizationRequest(op.client, { prompt: 'none', state: 'x'.repeat(64) + 'Ab1'.repeat(21) + 'z' });
    expect(request.state).toHaveLength(128);
    const outcome = await new Tester(op).open(request.url);
    expect(outcome.pages).toStrictEqual([]);
    const error = expectAuthorizationError(outcome, request.state);
    // CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface.
    expect(['interaction_required', 'login_required', 'account_selection_required', 'consent_required']).toContain(error);
  });
});

describe('oidcc-prompt-none-logged-in', () => {
  it('prompt=none in the signed-in browser: a code at once, same sub and auth_time', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    const second = await codeFlow(op, tester, { extras: { prompt: 'none' } });
    expect(second.outcome.pages).toStrictEqual([]);
    // CheckIdTokenAuthTimeClaimsSameIfPresent, CheckIdTokenSubConsistentForSecondAuthorization.
    expect(second.tokens.claims.auth_time).toBe(first.tokens.claims.auth_time);
    expect(second.tokens.claims.sub).toBe(first.tokens.claims.sub);
  });
});

describe('oidcc-max-age-1', () => {
  it('max_age=1 two seconds after the sign-in asks to sign in again; auth_time is present, later and recent', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    op.t.clock.advance(2); // WaitFor2Seconds
    const second = await codeFlow(op, tester, { extras: { max_age: '1' } });
    expect(second.outcome.pages[0]).toBe('login');
    const authTime = second.tokens.claims.auth_time as number;
    // CheckIdTokenAuthTimeClaimPresentDueToMaxAge, CheckSecondIdTokenAuthTimeIsLaterIfPresent, CheckIdTokenAuthTimeIsRecentIfPresent.
    expect(typeof authTime).toBe('number');
    expect(authTime).toBeGreaterThan(first.tokens.claims.auth_time as number);
    expect(authTime).toBeGreaterThanOrEqual(op.now() - 301);
  });
});

describe('oidcc-max-age-10000', () => {
  it('max_age=15000 then max_age=10000: the session is reused silently, auth_time present in both and equal', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester, { extras: { max_age: '15000' } });
    expect(typeof first.tokens.claims.auth_time).toBe('number');
    const second = await codeFlow(op, tester, { extras: { max_age: '10000' } });
    expect(second.outcome.pages).toStrictEqual([]);
    expect(second.tokens.claims.auth_time).toBe(first.tokens.claims.auth_time);
    expect(second.tokens.claims.sub).toBe(first.tokens.claims.sub);
  });
});

describe('oidcc-id-token-hint', () => {
  it('prompt=none with the first id_token as id_token_hint: a code at once for the same person', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    const second = await codeFlow(op, tester, { extras: { prompt: 'none', id_token_hint: first.tokens.idToken } });
    expect(second.outcome.pages).toStrictEqual([]);
    expect(second.tokens.claims.sub).toBe(first.tokens.claims.sub);
    expect(second.tokens.claims.auth_time).toBe(first.tokens.claims.auth_time);
  });

  it('a hint for someone else than the signed-in person is login_required with prompt=none; a forged hint invalid_request', async () => {
    const tester = new Tester(op);
    const first = await codeFlow(op, tester);
    // Another person signs in in another browser and gets an id_token of their own.
    await op.t.store.createUser({ ...op.user, id: 'other-person-id', username: 'willow', email: 'willow@example.test' });
    const willow = new Tester(op, { username: 'willow', password: 'conformance-password-1' });
    const theirs = await codeFlow(op, willow);
    const request = authorizationRequest(op.client, { prompt: 'none', id_token_hint: theirs.tokens.idToken });
    expect(expectAuthorizationError(await tester.open(request.url), request.state)).toBe('login_required');
    const forged = authorizationRequest(op.client, { prompt: 'none', id_token_hint: `${first.tokens.idToken.slice(0, -6)}AAAAAA` });
    expect(expectAuthorizationError(await tester.open(forged.url), forged.state)).toBe('invalid_request');
  });
});

describe('oidcc-login-hint', () => {
  it('login_hint pre-fills the sign-in form; the person may still sign in as themselves', async () => {
    const tester = new Tester(op);
    const request = authorizationRequest(op.client, { login_hint: `buffy@${new URL(issuer).host}` });
    const page = await tester.browser.follow(await tester.browser.get(new URL(request.url).pathname + new URL(request.url).search));
    expect(page.body).toContain(`value="buffy@op.example.test"`);
    await codeFlow(op, new Tester(op), { extras: { login_hint: 'buffy@op.example.test' } });
  });
});

describe('oidcc-ui-locales', () => {
  it('ui_locales=se (no translation) is accepted; ui_locales=fr shows the pages in French', async () => {
    await codeFlow(op, new Tester(op), { extras: { ui_locales: 'se' } });
    const tester = new Tester(op);
    const request = authorizationRequest(op.client, { ui_locales: 'fr-CA en' });
    const page = await tester.browser.follow(await tester.browser.get(new URL(request.url).pathname + new URL(request.url).search));
    expect(page.body).toContain('<html lang="fr"');
    await codeFlow(op, new Tester(op), { extras: { ui_locales: 'fr-CA en' } });
  });
});

describe('oidcc-claims-locales', () => {
  it('claims_locales=se is accepted', async () => {
    await codeFlow(op, new Tester(op), { extras: { claims_locales: 'se' } });
  });
});

describe('oidcc-ensure-request-with-acr-values-succeeds', () => {
  it('acr_values with every advertised value: a code, and an acr that is one of them (ValidateIdTokenACRClaimAgainstAcrValuesRequest)', async () => {
    const metadata = (await (await opFetch(op, discoveryUrl)).json()) as { acr_values_supported: string[] };
    expect(metadata.acr_values_supported.length).toBeGreaterThan(0);
    const acrValues = metadata.acr_values_supported.join(' ');
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { acr_values: acrValues } });
    expect(metadata.acr_values_supported).toContain(tokens.claims.acr);
  });

  it('acr_values=1 2 (values the server does not know) is voluntary and still answered', async () => {
    const { tokens } = await codeFlow(op, new Tester(op), { extras: { acr_values: '1 2' } });
    expect(typeof tokens.claims.acr).toBe('string');
  });
});
