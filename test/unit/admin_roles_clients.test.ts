import { describe, expect, it } from 'vitest';
import { resolvePermission, validRoleName, validScopeName, validScopeNames } from '../../src/directory/roles.js';
import { validJwks, validJwksUri, validSecretOverlap } from '../../src/directory/clients.js';
import { isConfidential } from '../../src/oauth/client_type.js';
import { AdminInputError } from '../../src/directory/validation.js';
import { api } from '../helpers/records.js';

function refusal(fn: () => unknown): AdminInputError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AdminInputError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('scope and role names', () => {
  it("scope names follow RFC 6749 §3.3 and may not be the server's own OIDC scopes", () => {
    expect(validScopeName('read:reports')).toBe('read:reports');
    for (const bad of ['', 'two words', 'quo"te', 'back\\slash', 'x'.repeat(129), 'openid', 'offline_access', 'é']) {
      expect(() => validScopeName(bad), bad).toThrow(AdminInputError);
    }
    expect(validScopeNames([' read ', 'read', '', 'write'])).toEqual(['read', 'write']);
    expect(refusal(() => validScopeNames(Array.from({ length: 101 }, (_, i) => `s${i}`))).message).toContain('at most 100');
  });

  it('role names are short identifiers', () => {
    expect(validRoleName('report-readers.eu')).toBe('report-readers.eu');
    for (const bad of ['', '-x', 'has space', 'x'.repeat(65), '<script>']) expect(() => validRoleName(bad), bad).toThrow(AdminInputError);
  });
});

describe('resolvePermission', () => {
  const apis = [
    api({ identifier: 'https://api.example.com', scopes: ['read', 'write:all'] }),
    api({ identifier: 'https://api.example.com:8443', scopes: ['read'] }),
    api({ identifier: 'urn:billing', scopes: ['read:invoices'] }),
  ];

  it('splits at the registered API whose identifier starts the text, scopes with colons included', () => {
    expect(resolvePermission(apis, 'https://api.example.com:write:all')).toEqual({ api: 'https://api.example.com', scope: 'write:all' });
    expect(resolvePermission(apis, 'https://api.example.com:8443:read')).toEqual({ api: 'https://api.example.com:8443', scope: 'read' });
    expect(resolvePermission(apis, 'urn:billing:read:invoices')).toEqual({ api: 'urn:billing', scope: 'read:invoices' });
  });

  it('refuses an unknown API or a scope the API does not declare, saying which', () => {
    expect(refusal(() => resolvePermission(apis, 'https://other.example.com:read')).message).toContain('registered API');
    expect(refusal(() => resolvePermission(apis, 'https://api.example.com:delete')).message).toContain('read, write:all');
    expect(refusal(() => resolvePermission(apis, 'https://api.example.com')).message).toContain('registered API');
  });
});

describe('client keys and secrets', () => {
  it('a JWKS must hold public signing keys only', () => {
    const rsa = { kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'a' };
    expect(validJwks(JSON.stringify({ keys: [rsa] }))).toEqual({ keys: [rsa] });
    for (const [label, text] of [
      ['not json', '{'],
      ['no keys', '{}'],
      ['empty', '{"keys":[]}'],
      ['private RSA', JSON.stringify({ keys: [{ ...rsa, d: 'secret' }] })],
      ['symmetric', JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] })],
      ['encryption key', JSON.stringify({ keys: [{ ...rsa, use: 'enc' }] })],
      ['not an object', JSON.stringify({ keys: ['x'] })],
      ['too many', JSON.stringify({ keys: Array.from({ length: 21 }, () => rsa) })],
    ] as const) {
      expect(() => validJwks(text), label).toThrow(AdminInputError);
    }
  });

  it('a jwks_uri is https, or http to loopback; no credentials or fragment', () => {
    expect(validJwksUri('https://app.example.com/jwks.json')).toBe('https://app.example.com/jwks.json');
    expect(validJwksUri('http://127.0.0.1:8080/jwks')).toBe('http://127.0.0.1:8080/jwks');
    for (const bad of [
      'http://app.example.com/jwks',
      'https://user:pw@app.example.com/jwks',
      'https://app.example.com/jwks#x',
      'file:///etc/passwd',
      'jwks.json',
    ]) {
      expect(() => validJwksUri(bad), bad).toThrow(AdminInputError);
    }
  });

  it('--keep-old-for is whole seconds, at most 30 days', () => {
    expect(validSecretOverlap(undefined)).toBe(0);
    expect(validSecretOverlap('3600')).toBe(3600);
    for (const bad of ['-1', '1.5', '1e3', String(30 * 86400 + 1)]) expect(() => validSecretOverlap(bad), bad).toThrow(AdminInputError);
  });

  it('a client with a secret or keys is confidential', () => {
    expect(isConfidential({ secretHash: 'x', jwksUri: undefined, jwks: undefined })).toBe(true);
    expect(isConfidential({ secretHash: undefined, jwksUri: 'https://k', jwks: undefined })).toBe(true);
    expect(isConfidential({ secretHash: undefined, jwksUri: undefined, jwks: undefined })).toBe(false);
  });
});
