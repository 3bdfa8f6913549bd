import { describe, it, expect } from 'vitest';
import { OAuthError } from '../../src/errors.js';
import { defaultScope, describeScopes, grantableScope, parseScope, scopeDescriptions, supportedScopes } from '../../src/oauth/scope.js';
import type { ClientRecord, GrantTypeName } from '../../src/store/store.js';
import { plainClientFields } from '../../src/directory/clients.js';

function client(grantTypes: GrantTypeName[]): ClientRecord {
  return {
    clientId: 'cli',
    name: 'CLI',
    secretHash: undefined,
    redirectUris: [],
    grantTypes,
    requirePkce: true,
    firstParty: false,
    builtIn: false,
    createdAt: 1_800_000_000,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    ...plainClientFields,
  };
}

function scopeError(raw: string): OAuthError {
  try {
    parseScope(raw);
  } catch (err) {
    if (err instanceof OAuthError) return err;
    throw err;
  }
  throw new Error(`parseScope(${JSON.stringify(raw)}) did not throw`);
}

describe('parseScope', () => {
  it('supports exactly openid, email, profile, address, phone, offline_access', () => {
    expect([...supportedScopes]).toEqual(['openid', 'email', 'profile', 'address', 'phone', 'offline_access']);
    expect(defaultScope).toBe('openid');
  });

  it('defaults to openid when scope is absent', () => {
    expect(parseScope(undefined)).toEqual(['openid']);
  });

  it('defaults to openid when scope is empty or blank', () => {
    expect(parseScope('')).toEqual(['openid']);
    expect(parseScope('   ')).toEqual(['openid']);
  });

  it('keeps the order given', () => {
    expect(parseScope('email openid')).toEqual(['email', 'openid']);
    expect(parseScope('offline_access profile openid email')).toEqual(['offline_access', 'profile', 'openid', 'email']);
  });

  it('does not add openid when other scopes are given', () => {
    expect(parseScope('email')).toEqual(['email']);
  });

  it('drops duplicates, keeping the first position', () => {
    expect(parseScope('openid email openid email profile openid')).toEqual(['openid', 'email', 'profile']);
  });

  it('tolerates repeated and surrounding spaces', () => {
    expect(parseScope('  openid   email ')).toEqual(['openid', 'email']);
  });

  it('rejects an unknown scope with invalid_scope (400)', () => {
    const err = scopeError('openid admin');
    expect(err.code).toBe('invalid_scope');
    expect(err.status).toBe(400);
    // The description never quotes the request (RFC 6749 §4.1.2.1); the log gets the value.
    expect(err.description).toBe('A requested scope is not supported.');
    expect(err.detail).toBe('unsupported scope admin');
  });

  it('is case-sensitive (OPENID is unknown)', () => {
    expect(scopeError('OPENID').code).toBe('invalid_scope');
  });

  it('shortens a long unknown scope in the log detail, and keeps it out of the description', () => {
    const err = scopeError('x'.repeat(500));
    expect(err.code).toBe('invalid_scope');
    expect(err.description).toBe('A requested scope is not supported.');
    expect(err.detail).toBe(`unsupported scope ${'x'.repeat(64)}`);
  });

  const badCharacters: Array<[string, string]> = [
    ['a double quote', 'openid "email"'],
    ['a backslash', 'open\\id'],
    ['a tab inside the string', 'openid\temail'],
    ['a newline', 'openid\nemail'],
    ['a control character', 'openid\u0001'],
    ['DEL', 'openid\u007f'],
    ['non-ASCII', 'émail'],
  ];
  for (const [name, raw] of badCharacters) {
    it(`rejects ${name} with invalid_scope`, () => {
      const err = scopeError(raw);
      expect(err.code).toBe('invalid_scope');
      expect(err.description).toBe('The scope contains characters that are not allowed.');
    });
  }
});

describe('grantableScope', () => {
  it('drops offline_access for a client without the refresh_token grant', () => {
    expect(grantableScope(['openid', 'offline_access', 'email'], client(['device_code']))).toEqual(['openid', 'email']);
  });

  it('keeps offline_access for a client with the refresh_token grant', () => {
    expect(grantableScope(['openid', 'offline_access', 'email'], client(['device_code', 'refresh_token']))).toEqual(['openid', 'offline_access', 'email']);
  });

  it('leaves other scopes untouched and in order', () => {
    expect(grantableScope(['profile', 'openid'], client(['authorization_code']))).toEqual(['profile', 'openid']);
  });

  it('refuses with invalid_scope when nothing grantable is left (never an empty scope)', () => {
    for (const requested of [[], ['offline_access']] as const) {
      try {
        grantableScope([...requested], client(['device_code']));
        expect.unreachable();
      } catch (err) {
        expect((err as { code: string }).code).toBe('invalid_scope');
      }
    }
  });
});

describe('describeScopes', () => {
  it('describes each known scope in order', () => {
    expect(describeScopes('openid email profile offline_access')).toEqual([
      'Confirm who you are (your account ID)',
      'See your email address',
      'See your name, username and other profile details',
      'Keep access when you are not using it, until the access is revoked or expires',
    ]);
  });

  it('follows the order of the scope string', () => {
    expect(describeScopes('offline_access openid')).toEqual([scopeDescriptions.offline_access, scopeDescriptions.openid]);
  });

  it('names an API scope as the API declares it, and skips empty strings', () => {
    expect(describeScopes('')).toEqual([]);
    expect(describeScopes('openid  read:reports email')).toEqual([scopeDescriptions.openid, 'Use the permission “read:reports”', scopeDescriptions.email]);
  });

  it('never takes names inherited from Object.prototype for OpenID Connect scopes', () => {
    expect(describeScopes('openid constructor __proto__')).toEqual([
      scopeDescriptions.openid,
      'Use the permission “constructor”',
      'Use the permission “__proto__”',
    ]);
  });
});
