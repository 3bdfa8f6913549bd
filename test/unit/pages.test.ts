import { describe, it, expect } from 'vitest';
import { safeReturnTo } from '../../src/http/pages.js';

describe('safeReturnTo', () => {
  const accepted = [
    '/activate/confirm?user_code=WDJB-MJHT',
    '/activate',
    '/',
    '/authorize?client_id=cli&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb',
    `/${'x'.repeat(2047)}`,
  ];
  for (const value of accepted) {
    it(`accepts ${JSON.stringify(value.slice(0, 60))}`, () => {
      expect(safeReturnTo(value)).toBe(value);
    });
  }

  for (const sneaky of ['/.//evil.example/x', '/%2e//evil.example', '/..//evil.example', '/x/..//evil.example', '/./\\evil.example']) {
    it(`refuses ${JSON.stringify(sneaky)}, which normalises into a network-path reference`, () => {
      expect(safeReturnTo(sneaky)).toBe('/activate');
    });
  }

  it('normalises dot segments and percent-encodes what a Location header cannot carry', () => {
    expect(safeReturnTo('/a/b/../c')).toBe('/a/c');
    expect(safeReturnTo('/☃')).toBe('/%E2%98%83');
    expect(safeReturnTo('/x?y=☃&z=%41')).toBe('/x?y=%E2%98%83&z=%41');
    expect(safeReturnTo('/../../etc')).toBe('/etc');
  });

  const rejected: Array<[string, string | undefined]> = [
    ['undefined', undefined],
    ['empty', ''],
    ['an absolute https URL', 'https://evil.example'],
    ['a protocol-relative URL', '//evil.example'],
    ['a protocol-relative URL with a path', '//evil.example/activate'],
    ['slash-backslash', '/\\evil.example'],
    ['a backslash later in the path', '/activate\\..\\\\evil'],
    ['javascript:', 'javascript:alert(1)'],
    ['a relative path', 'activate'],
    ['a tab', '/\t/evil.example'],
    ['a newline', '/activate\nSet-Cookie: x=1'],
    ['a carriage return', '/activate\r'],
    ['NUL', '/activate\u0000'],
    ['DEL', '/activate\u007f'],
    ['2049 characters', `/${'x'.repeat(2048)}`],
  ];
  for (const [name, value] of rejected) {
    it(`rejects ${name} → /activate`, () => {
      expect(safeReturnTo(value)).toBe('/activate');
    });
  }

  it('uses the given fallback', () => {
    expect(safeReturnTo('https://evil.example', '/')).toBe('/');
    expect(safeReturnTo(undefined, '/account')).toBe('/account');
    expect(safeReturnTo('/ok', '/account')).toBe('/ok');
  });
});
