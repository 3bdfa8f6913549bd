/** The "sign in again" command in messages, and how `latchkey status` sees a stored profile. */
import { describe, expect, it } from 'vitest';
import { CredentialsStore, type Profile } from '../../src/cli/client/credentials.js';
import { loginCommandLine } from '../../src/cli/client/sign_in_hint.js';
import { profileStatus, relativeTime } from '../../src/cli/client/status.js';

describe('loginCommandLine', () => {
  const defaultIssuer = 'http://localhost:3000';
  it.each([
    [{ profile: 'default', issuer: 'http://localhost:3000' }, [], 'latchkey login'],
    [{ profile: 'default', issuer: 'http://localhost:3000/' }, [], 'latchkey login'],
    [{ profile: 'default', issuer: undefined }, [], 'latchkey login'],
    [{ profile: 'work', issuer: 'http://localhost:3000' }, [], 'latchkey login --profile work'],
    [{ profile: 'default', issuer: 'https://id.example.com' }, [], 'latchkey login --issuer https://id.example.com'],
    [{ profile: 'team', issuer: 'http://localhost:41873' }, ['--device'], 'latchkey login --device --profile team --issuer http://localhost:41873'],
    [{ profile: "it's mine", issuer: undefined }, [], `latchkey login --profile 'it'\\''s mine'`],
  ])('%j %j → %s', (target, options, expected) => {
    expect(loginCommandLine({ ...target, defaultIssuer }, options)).toBe(expected);
  });
});

describe('profileStatus', () => {
  const store = new CredentialsStore('/nonexistent', 'http://localhost:3000');
  const now = 1_800_000_000;
  const profile: Profile = {
    issuer: 'https://id.example.com',
    client_id: 'latchkey-cli',
    scope: 'openid',
    access_token: 'secret-access-token',
    token_type: 'Bearer',
    expires_at: now + 600,
    refresh_token: 'secret-refresh-token',
    account: { sub: 's1', preferred_username: 'carol' },
  };

  it('valid, renewable, expired and damaged, each with what to run', () => {
    expect(profileStatus({ name: 'work', profile }, store, now)).toMatchObject({
      state: 'valid',
      sign_in: null,
      account: { preferred_username: 'carol', email: null },
    });
    expect(profileStatus({ name: 'work', profile: { ...profile, expires_at: now - 1 } }, store, now)).toMatchObject({
      state: 'renewable',
      sign_in: 'latchkey login --profile work --issuer https://id.example.com',
    });
    const { refresh_token: _dropped, ...withoutRefresh } = profile;
    expect(profileStatus({ name: 'default', profile: { ...withoutRefresh, expires_at: now - 1 } }, store, now)).toMatchObject({
      state: 'expired',
      refresh_token: false,
      sign_in: 'latchkey login --issuer https://id.example.com',
    });
    expect(profileStatus({ name: 'old', damaged: true, issuer: 'https://id.example.com' }, store, now)).toMatchObject({
      state: 'damaged',
      sign_in: 'latchkey login --profile old --issuer https://id.example.com',
    });
  });

  it('never carries a token, refresh token or key', () => {
    const text = JSON.stringify(profileStatus({ name: 'work', profile: { ...profile, dpop_jwk: { kty: 'EC', d: 'secret-key-part' } } }, store, now));
    for (const secret of ['secret-access-token', 'secret-refresh-token', 'secret-key-part']) expect(text).not.toContain(secret);
  });
});

describe('relativeTime', () => {
  it.each([
    [30, 'in 30 s'],
    [-30, '30 s ago'],
    [3540, 'in 59 min'],
    [-7200, '2 h ago'],
    [3 * 86400, 'in 3 days'],
  ])('%i s → %s', (offset, text) => {
    expect(relativeTime(new Date((1_800_000_000 + offset) * 1000).toISOString(), 1_800_000_000)).toBe(text);
  });
});
