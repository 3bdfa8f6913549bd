import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import {
  catalogs,
  matchLanguage,
  negotiateLanguage,
  parseAcceptLanguage,
  parseUiLocales,
  supportedLanguages,
  type Language,
} from '../../src/i18n/languages.js';
import { pageLanguage, setPageLanguage } from '../../src/i18n/page_language.js';
import { translator } from '../../src/i18n/translate.js';
import { scopeDescriptions } from '../../src/oauth/scope.js';
import { packageRoot, viewsDir } from '../../src/paths.js';

const fakeRequest = (acceptLanguage?: string) =>
  ({ headers: acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage } }) as unknown as FastifyRequest;

describe('the registry', () => {
  it('lists English first and French, in canonical BCP 47 casing', () => {
    expect(supportedLanguages).toEqual(['en', 'fr']);
    expect(Object.keys(catalogs)).toEqual([...supportedLanguages]);
    expect(catalogs.en).toBeUndefined();
  });
});

describe('parseUiLocales (OIDC Core §3.1.2.1)', () => {
  it('splits on spaces, in order, and skips what is not a language tag', () => {
    expect(parseUiLocales('fr-CA fr en')).toEqual(['fr-CA', 'fr', 'en']);
    expect(parseUiLocales('  de   fr ')).toEqual(['de', 'fr']);
    expect(parseUiLocales('fr,en * <script> fr_FR x-toolongsubtag123 es')).toEqual(['es']);
    expect(parseUiLocales(undefined)).toEqual([]);
    expect(parseUiLocales('')).toEqual([]);
  });

  it('reads a bounded part of a very long value, and never half a tag', () => {
    const long = `${'de '.repeat(400)}fr`;
    expect(parseUiLocales(long)).toHaveLength(20);
    expect(matchLanguage(parseUiLocales(long))).toBeUndefined(); // fr is past what is read
    expect(parseUiLocales(`${'a'.repeat(1022)} frr`)).toEqual([]); // cut inside "frr": dropped, not read as "fr"
    expect(parseUiLocales('x'.repeat(100_000))).toEqual([]);
  });
});

describe('parseAcceptLanguage (RFC 9110 §12.5.4)', () => {
  it('orders by q, equal weights as sent', () => {
    expect(parseAcceptLanguage('fr-FR,fr;q=0.9')).toEqual(['fr-FR', 'fr']);
    expect(parseAcceptLanguage('de;q=0.5, en;q=0.8, fr')).toEqual(['fr', 'en', 'de']);
    expect(parseAcceptLanguage('de;q=0.7,fr;q=0.7,en;q=0.7')).toEqual(['de', 'fr', 'en']);
    expect(parseAcceptLanguage('en-US,en;q=0.9')).toEqual(['en-US', 'en']);
    expect(parseAcceptLanguage('fr ; q=1.000 , en ;q=0.001')).toEqual(['fr', 'en']);
  });

  it('leaves out q=0 ("not this one") and the wildcard', () => {
    expect(parseAcceptLanguage('fr;q=0, en;q=0.1')).toEqual(['en']);
    expect(parseAcceptLanguage('fr;q=0.000')).toEqual([]);
    expect(parseAcceptLanguage('*, fr;q=0.5')).toEqual(['fr']);
  });

  it('skips malformed parts and keeps the rest', () => {
    expect(parseAcceptLanguage('fr;q=2, de;q=abc, es;q=0.5.5, it;q=, ja;x=1, pt;q=0.5;q=0.4, ru, en;q=0.3')).toEqual(['ru', 'en']);
    expect(parseAcceptLanguage('<script>alert(1)</script>, fr')).toEqual(['fr']);
    expect(parseAcceptLanguage(',,;;,=,;q=1')).toEqual([]);
    expect(parseAcceptLanguage('')).toEqual([]);
    expect(parseAcceptLanguage(undefined)).toEqual([]);
    expect(parseAcceptLanguage('fr_FR, français, en-')).toEqual([]);
  });

  it('considers at most 20 entries and a bounded length, never half a tag', () => {
    expect(parseAcceptLanguage(`${'de,'.repeat(30)}fr`)).toHaveLength(20);
    expect(negotiateLanguage(parseAcceptLanguage(`${'de,'.repeat(30)}fr`))).toBe('en');
    expect(parseAcceptLanguage(`${'x'.repeat(1022)},frr`)).toEqual([]); // cut inside "frr": dropped, not read as "fr"
    const huge = `${'en-US-'.repeat(200_000)}x`;
    const started = performance.now();
    expect(parseAcceptLanguage(huge)).toEqual([]);
    expect(parseAcceptLanguage(`fr;q=0.5,${'a'.repeat(2_000_000)}`)).toEqual(['fr']);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('negotiateLanguage', () => {
  const cases: Array<[string[], Language]> = [
    [['fr'], 'fr'],
    [['FR'], 'fr'],
    [['fr-CA'], 'fr'],
    [['fr-ca'], 'fr'],
    [['fr-Latn-FR-u-ca-gregory'], 'fr'],
    [['fr-x-private'], 'fr'],
    [['en-GB', 'fr'], 'en'],
    [['de', 'fr', 'en'], 'fr'],
    [['de', 'es'], 'en'],
    [['frr'], 'en'], // North Frisian is not French
    [['f'], 'en'],
    [[], 'en'],
    [['*', 'fr'], 'fr'],
  ];
  for (const [preferences, expected] of cases) {
    it(`${JSON.stringify(preferences)} → ${expected}`, () => {
      expect(negotiateLanguage(preferences)).toBe(expected);
    });
  }

  it('matchLanguage says when nothing matched', () => {
    expect(matchLanguage(['de'])).toBeUndefined();
    expect(matchLanguage(['de', 'fr-BE'])).toBe('fr');
  });
});

describe('pageLanguage', () => {
  it('follows Accept-Language, else English', () => {
    expect(pageLanguage(fakeRequest('fr-FR,fr;q=0.9,en;q=0.8'))).toBe('fr');
    expect(pageLanguage(fakeRequest('en-US,en;q=0.9,fr;q=0.8'))).toBe('en');
    expect(pageLanguage(fakeRequest('de-DE'))).toBe('en');
    expect(pageLanguage(fakeRequest('garbage;;;'))).toBe('en');
    expect(pageLanguage(fakeRequest())).toBe('en');
  });

  it('ui_locales comes first, in its own order', () => {
    const request = fakeRequest('en-US,en');
    setPageLanguage(request, 'de fr-CA en');
    expect(pageLanguage(request)).toBe('fr');
    setPageLanguage(request, 'en fr');
    expect(pageLanguage(request)).toBe('en');
  });

  it('ui_locales naming no supported language falls back to Accept-Language, then English', () => {
    const french = fakeRequest('fr');
    setPageLanguage(french, 'de ja');
    expect(pageLanguage(french)).toBe('fr');
    const german = fakeRequest('de');
    setPageLanguage(german, 'ja');
    expect(pageLanguage(german)).toBe('en');
    setPageLanguage(german, undefined);
    expect(pageLanguage(german)).toBe('en');
  });

  it('is per request', () => {
    const one = fakeRequest('en');
    const other = fakeRequest('en');
    setPageLanguage(one, 'fr');
    expect(pageLanguage(one)).toBe('fr');
    expect(pageLanguage(other)).toBe('en');
  });
});

describe('translator', () => {
  const en = translator('en');
  const fr = translator('fr');

  it('gives the catalog text, or the English when the catalog lacks the message', () => {
    expect(fr.lang).toBe('fr');
    expect(fr.t('Sign in')).toBe('Se connecter');
    expect(en.t('Sign in')).toBe('Sign in');
    expect(fr.t('A message no catalog has')).toBe('A message no catalog has');
    expect(fr.t('')).toBe('');
    for (const inherited of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expect(fr.t(inherited)).toBe(inherited);
      expect(fr.tx(inherited)).toBe(inherited);
    }
  });

  it('fills placeholders, leaves unfilled ones as written, and never re-reads a filled value', () => {
    expect(en.t('Sign in with {name}', { name: 'GitHub' })).toBe('Sign in with GitHub');
    expect(fr.t('Sign in with {name}', { name: 'GitHub' })).toBe('Se connecter avec GitHub');
    expect(fr.t('Sign in with {name}')).toBe('Se connecter avec {name}');
    expect(fr.t('Sign in with {name}', { other: 'x' })).toBe('Se connecter avec {name}');
    expect(en.t('{a} and {b} and {a}', { a: 1, b: '{a}' })).toBe('1 and {a} and 1');
    expect(en.t('Use {api} on your behalf', { api: { strong: 'Billing' } })).toBe('Use Billing on your behalf');
    expect(en.t('If nothing happens, {link}.', { link: { href: '/x', text: 'go on' } })).toBe('If nothing happens, go on.');
    expect(en.t('{toString} {constructor}', {})).toBe('{toString} {constructor}');
  });

  it('tx escapes the text and every parameter; { strong } and { href, text } become markup', () => {
    expect(en.tx('Sign in to continue to {client}.', { client: '<script>alert("x")</script>' })).toBe(
      'Sign in to continue to &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;.',
    );
    expect(fr.tx('Sign in to continue to {client}.', { client: { strong: `<img src=x onerror='1'> & co` } })).toBe(
      'Connectez-vous pour continuer vers <strong>&lt;img src=x onerror=&#39;1&#39;&gt; &amp; co</strong>.',
    );
    expect(en.tx('Signed in as {user}', { user: { strong: 'alice' } })).toBe('Signed in as <strong>alice</strong>');
    expect(en.tx('If nothing happens, {link}.', { link: { href: 'https://a.example/?x=1&y="2"', text: '<b>' } })).toBe(
      'If nothing happens, <a href="https://a.example/?x=1&amp;y=&quot;2&quot;">&lt;b&gt;</a>.',
    );
    expect(en.tx('A <b>message</b> & "more" {missing}')).toBe('A &lt;b&gt;message&lt;/b&gt; &amp; &quot;more&quot; {missing}');
    // The message's own straight apostrophe stays as the page had it; a parameter's is escaped.
    expect(en.tx("You're all set")).toBe("You're all set");
    expect(en.tx("You're {x}", { x: "'" })).toBe("You're &#39;");
  });
});

/** The literal messages a view passes to t(…) / tx(…). */
function viewMessages(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of readdirSync(viewsDir).filter((name) => name.endsWith('.eta'))) {
    const source = readFileSync(join(viewsDir, file), 'utf8');
    const calls = source.match(/\btx?\(/g) ?? [];
    const literals = [...source.matchAll(/\btx?\(\s*(?:'([^'\\]*)'|"([^"\\]*)")/g)].map((m) => m[1] ?? m[2]!);
    // Every call has a literal message, so that this list is complete.
    expect(literals, `${file}: a t() or tx() call without a literal message`).toHaveLength(calls.length);
    for (const message of literals) found.set(message, [...(found.get(message) ?? []), file]);
  }
  return found;
}

/**
 * The English texts routes hand to pages — headings, messages, titles, link labels, form errors —
 * read from their source, so that a new one without translations fails here.
 */
function routeMessages(): Set<string> {
  const pageRoutes = ['login', 'authorize', 'second_factor', 'device_verification', 'logout', 'password_reset', 'connectors'].map(
    (name) => `src/routes/${name}.ts`,
  );
  const connectorFiles = readdirSync(join(packageRoot, 'src/connectors')).map((name) => `src/connectors/${name}`);
  const sources: Array<[string[], RegExp]> = [
    [
      [...pageRoutes, 'src/http/pages.ts', 'src/app.ts', 'src/oauth/authorization_request.ts', 'src/oauth/pushed_request.ts'],
      /\b(?:heading|message|title|label)\s*:\s*'([^'\\]*)'/g,
    ],
    // A form shown again with its error: again('…', 401), showEntry(…, '…', 400) …
    [pageRoutes, /\b(?:again|showEntry|showForgot|showReset|showSecondStep)\(.*'([^'\\]+)',\s*\d{3}\)/g],
    [['src/routes/device_verification.ts'], /^ {2}\w+: '([^'\\]+)',$/gm], // its messages object
    [['src/routes/logout.ts'], /\breturn '([^'\\]+)';/g], // why a sign-out request is refused
    [['src/routes/second_factor.ts', 'src/http/form.ts'], /new OAuthError\('\w+', '([^'\\]+)'/g],
    [[...connectorFiles, 'src/routes/connectors.ts'], /new UpstreamError\('([^'\\]+)'/g],
  ];
  const found = new Set<string>(Object.values(scopeDescriptions));
  for (const [files, pattern] of sources) {
    for (const file of files) {
      for (const match of readFileSync(join(packageRoot, file), 'utf8').matchAll(pattern)) found.add(match[1]!);
    }
  }
  return found;
}

const placeholders = (text: string) => [...text.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]).sort();

describe('catalogs', () => {
  const messages = viewMessages();
  const fromRoutes = routeMessages();

  it('the views and routes give this test something to check', () => {
    expect(messages.size).toBeGreaterThan(80);
    expect(fromRoutes.size).toBeGreaterThan(80);
    expect(messages.get('Sign in')).toContain('login.eta');
    expect(fromRoutes).toContain('Wrong username or password.');
    expect(fromRoutes).toContain('This form has expired');
    expect(fromRoutes).toContain('That code isn’t right. Check the code on your device and try again.');
    expect(fromRoutes).toContain('See your phone number');
    expect(fromRoutes).toContain('Enter the email address of your account.');
    expect(fromRoutes).toContain('The application is not known here.');
    expect(fromRoutes).toContain('GitHub did not say who you are.');
    expect(fromRoutes).toContain('There is no passkey to use here.');
  });

  for (const language of supportedLanguages) {
    const catalog = catalogs[language];
    if (!catalog) continue;

    it(`${language}: every message of the views has a translation`, () => {
      const missing = [...messages.keys()].filter((message) => !Object.hasOwn(catalog, message));
      expect(missing).toEqual([]);
    });

    it(`${language}: every text routes pass to pages has a translation`, () => {
      const missing = [...fromRoutes].filter((message) => !Object.hasOwn(catalog, message));
      expect(missing).toEqual([]);
    });

    it(`${language}: every translation keeps exactly the placeholders of its English`, () => {
      const mismatched = Object.entries(catalog)
        .filter(([english, translated]) => placeholders(english).join() !== placeholders(translated).join())
        .map(([english]) => english);
      expect(mismatched).toEqual([]);
    });

    it(`${language}: translating a translation changes nothing (routes may pass text already translated)`, () => {
      const changed = Object.values(catalog).filter((translated) => Object.hasOwn(catalog, translated) && catalog[translated] !== translated);
      expect(changed).toEqual([]);
    });

    it(`${language}: no translation is empty or padded`, () => {
      const bad = Object.entries(catalog).filter(([, translated]) => translated === '' || translated !== translated.trim());
      expect(bad).toEqual([]);
    });
  }

  it('fr: typographic apostrophes, and a no-break space before : ; ? ! and inside « »', () => {
    const bad = Object.entries(catalogs.fr).filter(
      ([, text]) => text.includes("'") || /(?:^|[^\u00a0])[:;?!](?:\s|$)/.test(text) || /«(?!\u00a0)|(?<!\u00a0)»/.test(text),
    );
    expect(bad).toEqual([]);
  });
});
