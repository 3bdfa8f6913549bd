/** Second factors the way a person sets them up and uses them, through the pages. */
import { expect } from 'vitest';
import { createEnrolmentLink } from '../../src/mfa/enrolment_link.js';
import { totpCodeAt } from '../../src/mfa/totp.js';
import type { TestApp } from './app.js';
import { decodeEntities, inputValue, type Browser, type BrowserResponse } from './browser.js';

/** The base32 secret shown beside the QR code. */
export function shownSecret(page: string): string {
  const shown = page.match(/<code class="secret" id="totp-secret">([^<]+)<\/code>/)?.[1];
  expect(shown, 'the secret is shown as text').toBeDefined();
  return decodeEntities(shown!).replace(/\s/g, '');
}

/** Sets up an authenticator app on /account/security/totp and confirms it with its current code. */
export async function enrollTotp(t: TestApp, browser: Browser, returnTo?: string): Promise<{ secret: string; page: BrowserResponse }> {
  const setup = await browser.get(`/account/security/totp${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`);
  expect(setup.status).toBe(200);
  const secret = shownSecret(setup.body);
  const page = await browser.post('/account/security/totp', {
    csrf_token: inputValue(setup.body, 'csrf_token')!,
    setup: inputValue(setup.body, 'setup')!,
    otp: totpCodeAt(secret, t.clock()),
    ...(returnTo ? { return_to: returnTo } : {}),
  });
  return { secret, page };
}

/** The recovery codes of a "Save your recovery codes" page. */
export function shownRecoveryCodes(page: string): string[] {
  return [...page.matchAll(/<li><code>([a-z0-9-]+)<\/code><\/li>/g)].map((m) => m[1]!);
}

/** Answers the second step with a code (TOTP or recovery). */
export async function answerSecondStep(browser: Browser, stepPage: BrowserResponse, otp: string): Promise<BrowserResponse> {
  return browser.post('/login/second-factor', {
    csrf_token: inputValue(stepPage.body, 'csrf_token')!,
    return_to: inputValue(stepPage.body, 'return_to') ?? '',
    otp,
  });
}

/** The page's passkey form: fetch its options as the page's script does, ask the authenticator, post the answer. */
export async function usePasskeyForm(
  browser: Browser,
  page: BrowserResponse,
  action: string,
  respond: (options: Record<string, unknown>) => Record<string, unknown>,
  extra: Record<string, string> = {},
): Promise<BrowserResponse> {
  const formHtml = page.body.slice(page.body.indexOf(`action="${action}"`));
  const optionsUrl = formHtml.match(/data-options="([^"]+)"/)?.[1];
  expect(optionsUrl, `a passkey form posting to ${action}`).toBeDefined();
  const csrf = inputValue(formHtml, 'csrf_token')!;
  const optionsResponse = await browser.post(optionsUrl!, { csrf_token: csrf });
  expect(optionsResponse.status, optionsResponse.body).toBe(200);
  const options = JSON.parse(optionsResponse.body) as Record<string, unknown>;
  const returnTo = inputValue(formHtml, 'return_to');
  return browser.post(action, {
    csrf_token: csrf,
    credential: JSON.stringify(respond(options)),
    ...(returnTo === undefined ? {} : { return_to: returnTo }),
    ...extra,
  });
}

/**
 * The sanctioned way to an administrator's first factor: a one-time enrolment link for `username`
 * (made as `latchkey users mfa-enroll` makes it), opened in `browser` — signed in as that person —
 * and accepted with its Continue button. Returns the link and the answer (a 303 to the security page).
 */
export async function acceptEnrolmentLink(
  t: TestApp,
  browser: Browser,
  username: string,
  returnTo?: string,
): Promise<{ link: string; accepted: BrowserResponse }> {
  const user = await t.store.findUserByUsername(username);
  expect(user, `a user ${username}`).toBeDefined();
  const { link } = await createEnrolmentLink(t.store, t.config.issuer, user!, Math.floor(t.clock()));
  const url = new URL(link);
  const page = await browser.get(`${url.pathname}${url.search}${returnTo ? `&return_to=${encodeURIComponent(returnTo)}` : ''}`);
  expect(page.status, page.body.slice(0, 400)).toBe(200);
  const accepted = await browser.post('/account/security/enrol', {
    csrf_token: inputValue(page.body, 'csrf_token')!,
    code: inputValue(page.body, 'code')!,
    ...(returnTo ? { return_to: returnTo } : {}),
  });
  expect(accepted.status, accepted.body.slice(0, 400)).toBe(303);
  return { link, accepted };
}
