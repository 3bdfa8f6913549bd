import { describe, it, expect } from 'vitest';
import { formActionSource, isLoopbackRedirect, isPrivateUseRedirect, redirectUriAllowed, withResponseParams } from '../../src/oauth/redirect.js';

describe('redirectUriAllowed', () => {
  describe('exact match', () => {
    it.each([
      ['https://app.example.com/cb', ['https://app.example.com/cb']],
      ['https://app.example.com/cb', ['https://other.example.com/cb', 'https://app.example.com/cb']],
      ['http://127.0.0.1/callback', ['http://127.0.0.1/callback']],
      ['com.example.app:/cb', ['com.example.app:/cb']],
      ['https://app.example.com/cb?tenant=acme', ['https://app.example.com/cb?tenant=acme']],
    ])('%s is allowed by %j', (requested, registered) => {
      expect(redirectUriAllowed(requested, registered)).toBe(true);
    });

    it('nothing is allowed when nothing is registered', () => {
      expect(redirectUriAllowed('https://app.example.com/cb', [])).toBe(false);
      expect(redirectUriAllowed('http://127.0.0.1:5000/callback', [])).toBe(false);
    });
  });

  describe('loopback registrations accept any port (RFC 8252 §7.3)', () => {
    it.each([
      ['http://127.0.0.1:5000/callback', 'http://127.0.0.1/callback'],
      ['http://127.0.0.1:65535/callback', 'http://127.0.0.1/callback'],
      ['http://127.0.0.1:80/callback', 'http://127.0.0.1/callback'],
      ['http://127.0.0.1:5000/callback', 'http://127.0.0.1:8080/callback'],
      ['http://[::1]:5000/cb', 'http://[::1]/cb'],
      ['http://localhost:5000/cb', 'http://localhost/cb'],
      ['http://127.0.0.1:5000/callback?app=x', 'http://127.0.0.1/callback?app=x'],
    ])('%s matches %s', (requested, registered) => {
      expect(redirectUriAllowed(requested, [registered])).toBe(true);
    });

    it.each([
      ['another loopback host (localhost for 127.0.0.1)', 'http://localhost:5000/callback', 'http://127.0.0.1/callback'],
      ['another loopback host (127.0.0.1 for localhost)', 'http://127.0.0.1:5000/cb', 'http://localhost/cb'],
      ['another loopback host (127.0.0.1 for [::1])', 'http://127.0.0.1:5000/cb', 'http://[::1]/cb'],
      ['another path', 'http://127.0.0.1:5000/other', 'http://127.0.0.1/callback'],
      ['a longer path', 'http://127.0.0.1:5000/callback/x', 'http://127.0.0.1/callback'],
      ['a trailing slash', 'http://127.0.0.1:5000/callback/', 'http://127.0.0.1/callback'],
      ['an extra query', 'http://127.0.0.1:5000/callback?x=1', 'http://127.0.0.1/callback'],
      ['a different query', 'http://127.0.0.1:5000/callback?app=y', 'http://127.0.0.1/callback?app=x'],
      ['a missing query', 'http://127.0.0.1:5000/callback', 'http://127.0.0.1/callback?app=x'],
      ['a fragment', 'http://127.0.0.1:5000/callback#frag', 'http://127.0.0.1/callback'],
      ['an empty fragment', 'http://127.0.0.1:5000/callback#', 'http://127.0.0.1/callback'],
      ['the https scheme', 'https://127.0.0.1:5000/callback', 'http://127.0.0.1/callback'],
      ['userinfo', 'http://user@127.0.0.1:5000/callback', 'http://127.0.0.1/callback'],
      ['userinfo with a password', 'http://user:pw@127.0.0.1:5000/callback', 'http://127.0.0.1/callback'],
      ['userinfo that is itself a loopback host', 'http://127.0.0.1@localhost:5000/callback', 'http://127.0.0.1/callback'],
      ['a non-loopback host', 'http://evil.example:5000/callback', 'http://127.0.0.1/callback'],
      ['a host that only starts like a loopback one', 'http://127.0.0.1.evil.example:5000/callback', 'http://127.0.0.1/callback'],
      ['a non-URL', 'not a url', 'http://127.0.0.1/callback'],
    ])('refuses %s: %s for %s', (_name, requested, registered) => {
      expect(redirectUriAllowed(requested, [registered])).toBe(false);
    });
  });

  describe('non-loopback registrations accept only the exact string', () => {
    const registered = ['https://app.example.com/cb'];
    it.each([
      ['another port', 'https://app.example.com:8443/cb'],
      ['the explicit default port', 'https://app.example.com:443/cb'],
      ['a trailing slash', 'https://app.example.com/cb/'],
      ['a change of case in the path', 'https://app.example.com/CB'],
      ['a change of case in the host', 'https://APP.example.com/cb'],
      ['an extra query', 'https://app.example.com/cb?x=1'],
      ['an empty query', 'https://app.example.com/cb?'],
      ['a fragment', 'https://app.example.com/cb#x'],
      ['http instead of https', 'http://app.example.com/cb'],
      ['userinfo', 'https://user@app.example.com/cb'],
      ['a dot segment that normalizes to it', 'https://app.example.com/x/../cb'],
      ['another host', 'https://evil.example.com/cb'],
    ])('refuses %s: %s', (_name, requested) => {
      expect(redirectUriAllowed(requested, registered)).toBe(false);
    });

    it('a plain-http non-loopback registration gets no port leniency', () => {
      expect(redirectUriAllowed('http://app.example.com:8080/cb', ['http://app.example.com/cb'])).toBe(false);
    });
  });

  describe('private-use scheme registrations match exactly', () => {
    const registered = ['com.example.app:/cb'];
    it.each([
      ['another path', 'com.example.app:/other'],
      ['an extra query', 'com.example.app:/cb?x=1'],
      ['a double slash form', 'com.example.app://cb'],
      ['another scheme', 'com.evil.app:/cb'],
    ])('refuses %s: %s', (_name, requested) => {
      expect(redirectUriAllowed(requested, registered)).toBe(false);
    });
  });
});

describe('isLoopbackRedirect', () => {
  it.each([
    ['http://127.0.0.1/callback', true],
    ['http://127.0.0.1:5000/callback', true],
    ['http://[::1]:5000/cb', true],
    ['http://localhost:5000/cb', true],
    ['https://127.0.0.1:5000/callback', false],
    ['https://localhost/cb', false],
    ['http://app.example.com/cb', false],
    ['https://app.example.com/cb', false],
    ['http://127.0.0.2/cb', false],
    ['com.example.app:/cb', false],
    ['not a url', false],
    ['', false],
  ])('%s → %s', (uri, expected) => {
    expect(isLoopbackRedirect(uri)).toBe(expected);
  });
});

describe('withResponseParams', () => {
  it('adds the parameters to a URI without a query', () => {
    expect(withResponseParams('https://app.example.com/cb', { code: 'lk_ac_abc', state: 's1', iss: 'http://latchkey.test' })).toBe(
      'https://app.example.com/cb?code=lk_ac_abc&state=s1&iss=http%3A%2F%2Flatchkey.test',
    );
  });

  it('appends to an existing query and keeps it', () => {
    const result = withResponseParams('https://app.example.com/cb?tenant=acme&x=1', { code: 'c1', state: 's1' });
    expect(result).toBe('https://app.example.com/cb?tenant=acme&x=1&code=c1&state=s1');
    expect([...new URL(result).searchParams]).toEqual([
      ['tenant', 'acme'],
      ['x', '1'],
      ['code', 'c1'],
      ['state', 's1'],
    ]);
  });

  it('encodes values so that they cannot add parameters or a fragment', () => {
    const result = withResponseParams('https://app.example.com/cb', { state: 'a b&c=d#e+f/é', error_description: '100% "wrong"' });
    expect(result).toBe('https://app.example.com/cb?state=a+b%26c%3Dd%23e%2Bf%2F%C3%A9&error_description=100%25+%22wrong%22');
    expect(Object.fromEntries(new URL(result).searchParams)).toEqual({ state: 'a b&c=d#e+f/é', error_description: '100% "wrong"' });
    expect(new URL(result).hash).toBe('');
  });

  it('leaves out undefined values', () => {
    expect(withResponseParams('https://app.example.com/cb', { error: 'access_denied', state: undefined })).toBe(
      'https://app.example.com/cb?error=access_denied',
    );
  });

  it('keeps the port of a loopback redirect', () => {
    expect(withResponseParams('http://127.0.0.1:53682/callback', { code: 'c1' })).toBe('http://127.0.0.1:53682/callback?code=c1');
    expect(withResponseParams('http://[::1]:53682/cb', { code: 'c1' })).toBe('http://[::1]:53682/cb?code=c1');
  });

  it('works for a private-use scheme URI', () => {
    expect(withResponseParams('com.example.app:/cb', { code: 'c1', state: 's 1' })).toBe('com.example.app:/cb?code=c1&state=s+1');
    expect(withResponseParams('com.example.app:/cb?x=1', { code: 'c1' })).toBe('com.example.app:/cb?x=1&code=c1');
  });
});

// CSP3 §2.3.1 source expressions that form-action can hold: a scheme-source or a host-source.
const cspSchemeSource = /^[A-Za-z][A-Za-z0-9+.-]*:$/;
const cspHostSource = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?(\*|(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?)(:([0-9]+|\*))?$/;

describe('formActionSource', () => {
  it.each([
    ['https://app.example.com/cb', 'https://app.example.com'],
    ['https://app.example.com:8443/cb?x=1', 'https://app.example.com:8443'],
    ['http://127.0.0.1:53682/callback', 'http://127.0.0.1:53682'],
    ['http://localhost:53682/cb', 'http://localhost:53682'],
    ['http://127.0.0.1/callback', 'http://127.0.0.1'],
    ['com.example.app:/cb', 'com.example.app:'],
    ['com.example.app:/cb?x=1', 'com.example.app:'],
  ])('%s → %s', (uri, expected) => {
    expect(formActionSource(uri)).toBe(expected);
  });

  it.each([['not a url'], [''], ['/relative/cb'], ['http://']])('%j → undefined', (uri) => {
    expect(formActionSource(uri)).toBeUndefined();
  });

  // Browsers drop a source that does not parse as CSP (and keep only 'self'), and they check
  // form-action on the redirect that follows the consent/sign-in post: an unparsable source
  // would block the redirect back to the client.
  it.each([
    ['https://app.example.com:8443/cb'],
    ['http://127.0.0.1:53682/callback'],
    ['http://localhost:53682/cb'],
    ['com.example.app:/cb'],
    ['http://[::1]:53682/cb'],
  ])('the source for %s is a valid CSP3 source expression', (uri) => {
    const source = formActionSource(uri);
    expect(source).toBeDefined();
    expect(cspSchemeSource.test(source ?? '') || cspHostSource.test(source ?? ''), `"${source}" is not a CSP3 source expression`).toBe(true);
  });
});

describe('withResponseParams keeps the registered query byte for byte (RFC 6749 §3.1.2)', () => {
  const cases: Array<[string, string]> = [
    ['https://app.example.com/cb?next=/home', 'https://app.example.com/cb?next=/home&code=c%2B1&state=s'],
    ['https://app.example.com/cb?flag', 'https://app.example.com/cb?flag&code=c%2B1&state=s'],
    ['https://app.example.com/cb?a=%20b', 'https://app.example.com/cb?a=%20b&code=c%2B1&state=s'],
    ['https://app.example.com/cb?', 'https://app.example.com/cb?code=c%2B1&state=s'],
    ['https://app.example.com/cb', 'https://app.example.com/cb?code=c%2B1&state=s'],
  ];
  for (const [registered, expected] of cases) {
    it(`${registered} → ${expected}`, () => {
      expect(withResponseParams(registered, { code: 'c+1', state: 's', skipped: undefined })).toBe(expected);
    });
  }
});

describe('loopback redirect URIs are compared as written, only the port may differ', () => {
  const registered = ['http://127.0.0.1/callback'];
  for (const requested of [
    'http://127.0.0.1:4561/call\nback',
    'http://127.0.0.1:4561/call\tback',
    ' http://127.0.0.1:4561/callback',
    'http://127.1:4561/callback',
    'http://0x7f000001:4561/callback',
    'http://127.0.0.1:4561/x/../callback',
    'http://127.0.0.1:4561\\callback',
    'http://127.0.0.1:4561/callback/',
    'http://127.0.0.1:0/callback',
    'http://127.0.0.1:65536/callback',
    'http://127.0.0.1:4561/Callback',
    'http://127.0.0.1:4561/callback?x=1',
  ]) {
    it(`refuses ${JSON.stringify(requested)}`, () => {
      expect(redirectUriAllowed(requested, registered)).toBe(false);
    });
  }
  it('accepts another port, and no port', () => {
    expect(redirectUriAllowed('http://127.0.0.1:4561/callback', registered)).toBe(true);
    expect(redirectUriAllowed('http://127.0.0.1/callback', registered)).toBe(true);
    expect(redirectUriAllowed('http://[::1]:9/cb', ['http://[::1]/cb'])).toBe(true);
  });
});

describe('isPrivateUseRedirect', () => {
  it('is true for reverse-domain schemes only', () => {
    expect(isPrivateUseRedirect('com.example.app:/cb')).toBe(true);
    expect(isPrivateUseRedirect('https://app.example.com/cb')).toBe(false);
    expect(isPrivateUseRedirect('http://127.0.0.1/cb')).toBe(false);
  });
});
