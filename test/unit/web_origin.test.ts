/**
 * Web origins: what an operator may register (`--web-origin`, the console, `web_origins` in
 * registration metadata) and how it is stored (RFC 6454 §6.2 serialisation), and which Origin
 * headers count as a browser's origin at all.
 */
import { describe, expect, it } from 'vitest';
import { AdminInputError, validWebOrigin, validWebOrigins } from '../../src/directory/validation.js';
import { requestOrigin } from '../../src/oauth/web_origin.js';

describe('validWebOrigin', () => {
  it('stores an origin as a browser sends it: lower case, no default port, an internationalised host in ASCII', () => {
    expect(validWebOrigin('https://app.example.com')).toBe('https://app.example.com');
    expect(validWebOrigin('HTTPS://App.Example.COM:443')).toBe('https://app.example.com');
    expect(validWebOrigin('https://app.example.com:8443')).toBe('https://app.example.com:8443');
    expect(validWebOrigin('https://bücher.example')).toBe('https://xn--bcher-kva.example');
    expect(validWebOrigin('https://[2001:db8::1]:8443')).toBe('https://[2001:db8::1]:8443');
  });

  it('plain http only to a loopback host, with any port', () => {
    expect(validWebOrigin('http://localhost:5173')).toBe('http://localhost:5173');
    expect(validWebOrigin('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    expect(validWebOrigin('http://[::1]:80')).toBe('http://[::1]');
    expect(() => validWebOrigin('http://app.example.com')).toThrow(/plain http to a host that is not loopback/);
  });

  it.each([
    ['https://app.example.com/', /has a path, query or fragment/],
    ['https://app.example.com/callback', /has a path/],
    ['https://app.example.com?x=1', /has a path, query or fragment/],
    ['https://app.example.com#top', /has a path, query or fragment/],
    ['https://user:pass@app.example.com', /user name or password/],
    ['https://*.example.com', /wildcard/],
    ['*', /is not a web origin/],
    ['null', /is not a web origin/],
    ['app.example.com', /is not a web origin/],
    ['ftp://files.example.com', /must use https/],
    ['javascript://x', /must use https/],
    ['https://app.example.com:0', /port 0/],
    ['https://app.example.com:65536', /is not a web origin/],
    ['https://', /is not a web origin/],
    ['https://app example.com', /is not a web origin/],
    ['https://app.example.com\n', /is not a web origin/],
    ['', /is not a web origin/],
    [`https://${'a'.repeat(600)}.example`, /is not a web origin/],
  ])('refuses %j', (value, message) => {
    expect(() => validWebOrigin(value)).toThrow(AdminInputError);
    expect(() => validWebOrigin(value)).toThrow(message);
  });

  it('a list keeps each origin once, in the order given, and at most 20', () => {
    expect(validWebOrigins(['https://b.example', 'HTTPS://B.EXAMPLE', 'https://a.example'])).toEqual(['https://b.example', 'https://a.example']);
    expect(() => validWebOrigins(Array.from({ length: 21 }, (_, i) => `https://app${i}.example`))).toThrow(/at most 20 web origins/);
  });
});

describe('requestOrigin', () => {
  it('is the Origin header when it is a serialised http(s) origin exactly as browsers send it', () => {
    expect(requestOrigin('https://app.example.com')).toBe('https://app.example.com');
    expect(requestOrigin('http://127.0.0.1:5173')).toBe('http://127.0.0.1:5173');
    // Any http(s) origin counts as one (whether it is registered is decided elsewhere).
    expect(requestOrigin('http://intranet.example')).toBe('http://intranet.example');
  });

  it('is undefined for anything else: absent, null, repeated, a path, upper case, a default port written out', () => {
    for (const header of [
      undefined,
      'null',
      'https://a.example, https://b.example',
      'https://a.example/',
      'HTTPS://A.EXAMPLE',
      'https://a.example:443',
      'https://user@a.example',
    ])
      expect(requestOrigin(header), String(header)).toBeUndefined();
    expect(requestOrigin(['https://a.example', 'https://b.example'])).toBeUndefined();
  });
});
