import { describe, it, expect } from 'vitest';
import { claimsForScope } from '../../src/oauth/claims.js';
import { user } from '../helpers/records.js';

describe('claimsForScope', () => {
  const alice = user({ username: 'alice', email: 'alice@example.com', name: 'Alice Example' });

  it.each([
    ['openid', {}],
    ['openid offline_access', {}],
    ['', {}],
    ['openid email', { email: 'alice@example.com', email_verified: true }],
    ['email', { email: 'alice@example.com', email_verified: true }],
    ['openid profile', { name: 'Alice Example', preferred_username: 'alice' }],
    [
      'openid email profile offline_access',
      { email: 'alice@example.com', email_verified: true, name: 'Alice Example', preferred_username: 'alice' },
    ],
    ['profile email', { email: 'alice@example.com', email_verified: true, name: 'Alice Example', preferred_username: 'alice' }],
  ])('scope %j → %j', (scope, expected) => {
    expect(claimsForScope(alice, scope)).toStrictEqual(expected);
  });

  it('name falls back to the username when the user has no name', () => {
    const bob = user({ username: 'bob', name: undefined });
    expect(claimsForScope(bob, 'openid profile')).toStrictEqual({ name: 'bob', preferred_username: 'bob' });
  });

  it('matches whole scope words only', () => {
    expect(claimsForScope(alice, 'openid emails profiles')).toStrictEqual({});
  });
});
