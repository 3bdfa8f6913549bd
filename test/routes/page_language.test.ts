import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addUser, testApp, type TestApp } from '../helpers/app.js';
import { Browser, injectTransport, inputValue, signIn } from '../helpers/browser.js';

let t: TestApp;
let browser: Browser;

beforeEach(async () => {
  t = await testApp();
  await addUser(t.store, 'alice', 'alice-password');
  browser = new Browser(injectTransport(t.app));
});
afterEach(() => t.close());

const french = 'fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7';

describe('the sign-in pages speak the browser’s language (Accept-Language)', () => {
  it('French for a French browser', async () => {
    browser.extraHeaders = { 'accept-language': french };
    const res = await browser.get('/login');
    expect(res.status).toBe(200);
    expect(res.body).toContain('<html lang="fr">');
    expect(res.body).toContain('<title>Se connecter · Latchkey</title>');
    expect(res.body).toContain('<h1 id="page-title">Se connecter</h1>');
    expect(res.body).toContain('<label for="username">Nom d’utilisateur</label>');
    expect(res.body).not.toContain('Sign in');
    expect(res.headers.vary).toMatch(/\bAccept-Language\b/);
  });

  it('English without the header, and for a language there is no translation for', async () => {
    for (const header of [undefined, 'de-DE,de;q=0.9', 'fr;q=0, en;q=0.5', ';;garbage']) {
      browser.extraHeaders = header === undefined ? {} : { 'accept-language': header };
      const res = await browser.get('/login');
      expect(res.body).toContain('<html lang="en">');
      expect(res.body).toContain('<h1 id="page-title">Sign in</h1>');
    }
  });

  it('what a route passes — a form error, an error page’s heading, message and link — is translated', async () => {
    browser.extraHeaders = { 'accept-language': french };
    const wrong = await signIn(browser, await browser.get('/login'), 'alice', 'not-her-password');
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('<p class="alert" role="alert">Nom d’utilisateur ou mot de passe incorrect.</p>');

    const expired = await browser.post('/login', { csrf_token: 'forged', username: 'alice', password: 'alice-password' });
    expect(expired.status).toBe(403);
    expect(expired.body).toContain('<title>Ce formulaire a expiré · Latchkey</title>');
    expect(expired.body).toContain('<h1 id="page-title">Ce formulaire a expiré</h1>');
    expect(expired.body).toContain('Pour votre sécurité, le formulaire n’a pas pu être accepté.');
    expect(expired.body).toMatch(/<a class="button" href="\/login\?return_to=[^"]*">Se connecter<\/a>/);

    const missing = await browser.get('/no-such-page');
    expect(missing.status).toBe(404);
    expect(missing.body).toContain('<h1 id="page-title">Page introuvable</h1>');
  });

  it('the device flow: a wrong code is told in French', async () => {
    browser.extraHeaders = { 'accept-language': 'fr-CA' };
    const page = await browser.get('/activate');
    expect(page.body).toContain('<h1 id="page-title">Connecter un appareil</h1>');
    const res = await browser.post('/activate', { csrf_token: inputValue(page.body, 'csrf_token') ?? '', user_code: 'BCDF-GHJK' });
    expect(res.status).toBe(400);
    expect(res.body).toContain('Ce code n’est pas correct. Vérifiez le code affiché sur votre appareil et réessayez.');
  });

  it('the footer follows the page; pages not translated yet stay English throughout', async () => {
    browser.extraHeaders = { 'accept-language': french };
    await signIn(browser, await browser.get('/login'), 'alice', 'alice-password');
    const activate = await browser.get('/activate');
    expect(activate.body).toContain('Session ouverte en tant que <strong>alice</strong> · <a href="/account">Compte</a>');
    const account = await browser.get('/account');
    expect(account.status).toBe(200);
    expect(account.body).toContain('<html lang="en">');
    expect(account.body).toContain('Signed in as <strong>alice</strong> · <a href="/account">Account</a>');
  });
});
