import { describe, it, expect } from 'vitest';
import { claimScopes, claimsForScope, idTokenClaims, personClaims, scopeOfClaim, userinfoClaims } from '../../src/oauth/claims.js';
import { parseClaimsParameter } from '../../src/oauth/claims_request.js';
import { OAuthError } from '../../src/errors.js';
import { user } from '../helpers/records.js';

const profile = {
  given_name: 'Alice',
  family_name: 'Example',
  birthdate: '0000-03-14',
  zoneinfo: 'Europe/Paris',
  locale: 'fr-FR',
  website: 'https://alice.example',
  phone_number: '+33 1 23 45 67 89',
  phone_number_verified: false,
  address: { street_address: '1 rue de la Paix', locality: 'Paris', postal_code: '75002', country: 'FR' },
};

describe('claims by scope (OIDC Core §5.4)', () => {
  const alice = user({ username: 'alice', email: 'alice@example.com', name: 'Alice Example', updatedAt: 1_800_000_123 });
  const full = user({ username: 'alice', name: 'Alice Example', updatedAt: 1_800_000_123, profile });

  it.each([
    ['openid', {}],
    ['openid offline_access', {}],
    ['', {}],
    ['openid email', { email: 'alice@example.com', email_verified: true }],
    ['email', { email: 'alice@example.com', email_verified: true }],
    ['openid profile', { name: 'Alice Example', preferred_username: 'alice', updated_at: 1_800_000_123 }],
    ['profile email', { name: 'Alice Example', preferred_username: 'alice', updated_at: 1_800_000_123, email: 'alice@example.com', email_verified: true }],
    ['openid address phone', {}],
  ])('a user without profile claims, scope %j → %j', (scope, expected) => {
    expect(claimsForScope(alice, scope)).toStrictEqual(expected);
  });

  it('the profile scope releases the profile claims the person has, address and phone their own', () => {
    expect(claimsForScope(full, 'openid profile')).toStrictEqual({
      name: 'Alice Example',
      family_name: 'Example',
      given_name: 'Alice',
      preferred_username: 'alice',
      website: 'https://alice.example',
      birthdate: '0000-03-14',
      zoneinfo: 'Europe/Paris',
      locale: 'fr-FR',
      updated_at: 1_800_000_123,
    });
    expect(claimsForScope(full, 'address')).toStrictEqual({ address: profile.address });
    expect(claimsForScope(full, 'phone')).toStrictEqual({ phone_number: '+33 1 23 45 67 89', phone_number_verified: false });
  });

  it('name falls back to the username; no email means no email claims; empty values and empty addresses are left out', () => {
    const bob = user({ username: 'bob', name: undefined, email: '', profile: { nickname: '', address: { locality: '' }, phone_number_verified: true } });
    expect(claimsForScope(bob, 'openid profile email address phone')).toStrictEqual({ name: 'bob', preferred_username: 'bob', updated_at: bob.updatedAt });
  });

  it('matches whole scope words only', () => {
    expect(claimsForScope(alice, 'openid emails profiles')).toStrictEqual({});
  });

  it('userinfo adds the claims asked for by name; unknown names are ignored', () => {
    expect(userinfoClaims(full, 'openid', ['name', 'phone_number', 'shoe_size', 'sub'])).toStrictEqual({
      name: 'Alice Example',
      phone_number: '+33 1 23 45 67 89',
    });
  });

  it('id_tokens: the contract\u2019s basic claims for email/profile unless turned off, plus those asked for the id_token', () => {
    const requested = { userinfo: ['address'], idToken: ['locale'] };
    expect(idTokenClaims(full, 'openid email profile address', requested, 'basic')).toStrictEqual({
      email: 'alice@example.com',
      email_verified: true,
      name: 'Alice Example',
      preferred_username: 'alice',
      locale: 'fr-FR',
    });
    expect(idTokenClaims(full, 'openid email profile', requested, 'none')).toStrictEqual({ locale: 'fr-FR' });
  });

  it('each person claim belongs to one scope, which consent covers', () => {
    for (const claim of personClaims) expect(scopeOfClaim(claim)).toBeDefined();
    expect(scopeOfClaim('sub')).toBeUndefined();
    expect(claimScopes({ userinfo: ['name', 'address'], idToken: ['email', 'nickname'] }).sort()).toStrictEqual(['address', 'email', 'profile']);
    expect(claimScopes(undefined)).toStrictEqual([]);
  });
});

describe('the claims request parameter (OIDC Core §5.5)', () => {
  it('keeps the person claims asked for each target, in order, and ignores the rest', () => {
    const parsed = parseClaimsParameter(
      JSON.stringify({ userinfo: { name: { essential: true }, shoe_size: null }, id_token: { email: null, auth_time: { essential: true } }, other: 1 }),
    );
    expect(parsed).toStrictEqual({ requested: { userinfo: ['name'], idToken: ['email'] }, subject: undefined, acr: undefined });
  });

  it('nothing held asked for → no requested claims; an object from a request object works like its JSON', () => {
    expect(parseClaimsParameter('{"id_token":{"auth_time":null}}').requested).toBeUndefined();
    expect(parseClaimsParameter({ userinfo: { email: null } }).requested).toStrictEqual({ userinfo: ['email'], idToken: [] });
  });

  it('a sub with a value names the person; two different values are malformed', () => {
    expect(parseClaimsParameter('{"id_token":{"sub":{"value":"u-1"}}}').subject).toBe('u-1');
    expect(parseClaimsParameter('{"id_token":{"sub":{"value":"u-1"}},"userinfo":{"sub":{"value":"u-1"}}}').subject).toBe('u-1');
    expect(() => parseClaimsParameter('{"id_token":{"sub":{"value":"u-1"}},"userinfo":{"sub":{"value":"u-2"}}}')).toThrow(OAuthError);
  });

  it('acr with values (value first), essential or not', () => {
    expect(parseClaimsParameter('{"id_token":{"acr":{"essential":true,"values":["urn:latchkey:mfa"]}}}').acr).toStrictEqual({
      values: ['urn:latchkey:mfa'],
      essential: true,
    });
    expect(parseClaimsParameter('{"id_token":{"acr":{"value":"a","values":["b",3]}}}').acr).toStrictEqual({ values: ['a', 'b'], essential: false });
    expect(parseClaimsParameter('{"id_token":{"acr":null}}').acr).toBeUndefined();
  });

  it.each([
    ['not JSON', '{'],
    ['an array', '[]'],
    ['a string', '"x"'],
    ['a target that is not an object', '{"userinfo":[]}'],
    ['a claim that is neither null nor an object', '{"userinfo":{"name":true}}'],
    ['essential that is not a boolean', '{"userinfo":{"name":{"essential":1}}}'],
    ['values that is not an array', '{"userinfo":{"name":{"values":"a"}}}'],
    ['a sub value longer than 255 characters', JSON.stringify({ id_token: { sub: { value: 'x'.repeat(256) } } })],
    ['a sub value that is not ASCII', JSON.stringify({ id_token: { sub: { value: 'ü' } } })],
    ['longer than 4096 characters', JSON.stringify({ userinfo: { name: { value: 'x'.repeat(5000) } } })],
  ])('%s is invalid_request', (_, raw) => {
    try {
      parseClaimsParameter(raw);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(OAuthError);
      expect((err as OAuthError).code).toBe('invalid_request');
    }
  });
});
