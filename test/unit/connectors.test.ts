/** The pure parts of the connectors (issue 15): filter escaping, usernames, groups, settings. */
import { describe, expect, it } from 'vitest';
import { escapeFilterValue, userFilter } from '../../src/connectors/ldap_filter.js';
import { usernameCandidates } from '../../src/connectors/accounts.js';
import { cleanGroups } from '../../src/connectors/upstream_profile.js';
import { githubWebBase } from '../../src/connectors/github_upstream.js';
import { connectorIdPattern, ldapConfigSchema, oidcConfigSchema, typedConnector } from '../../src/connectors/connector_config.js';

describe('LDAP filter values (RFC 4515 §3)', () => {
  it('escapes *, (, ), \\ and NUL, and nothing else', () => {
    expect(escapeFilterValue('*)(uid=*')).toBe('\\2a\\29\\28uid=\\2a');
    expect(escapeFilterValue('a\\b\u0000c')).toBe('a\\5cb\\00c');
    expect(escapeFilterValue('dora.o-brien@example.org')).toBe('dora.o-brien@example.org');
    expect(escapeFilterValue('Jürgen')).toBe('Jürgen');
  });

  it('fills every {username} of the template', () => {
    expect(userFilter('(|(uid={username})(mail={username}))', 'a*')).toBe('(|(uid=a\\2a)(mail=a\\2a))');
  });
});

describe('usernames for users an upstream creates', () => {
  const profile = (username: string | undefined, email?: string) => ({ subject: 's', username, email, emailVerified: true, name: undefined, groups: [] });

  it('the upstream name first, then qualified by the connector, then numbered', () => {
    const candidates = usernameCandidates(profile('pat'), 'acme');
    expect(candidates.slice(0, 3)).toEqual(['pat', 'pat@acme', 'pat@acme-2']);
    expect(new Set(candidates).size).toBe(candidates.length);
  });

  it('keeps to the characters usernames allow, and falls back to the email\'s name, then "user"', () => {
    expect(usernameCandidates(profile('Zoë O\'Brien'), 'x')[0]).toBe('ZoeOBrien');
    expect(usernameCandidates(profile(undefined, 'kim@corp.example'), 'x')[0]).toBe('kim');
    expect(usernameCandidates(profile('日本'), 'x')[0]).toBe('user');
    for (const c of usernameCandidates(profile('x'.repeat(200)), 'connector-with-a-long-name')) expect(c).toMatch(/^[A-Za-z0-9._@-]{1,64}$/);
  });
});

describe('groups', () => {
  it('strings only, trimmed, unique, without control characters', () => {
    expect(cleanGroups(['a', ' b ', 'a', 7, '', 'bad\u0000', null])).toEqual(['a', 'b']);
    expect(cleanGroups('x y,z')).toEqual(['x', 'y', 'z']);
    expect(cleanGroups(undefined)).toEqual([]);
    expect(cleanGroups(Array.from({ length: 500 }, (_, i) => `g${i}`))).toHaveLength(200);
  });
});

describe('GitHub addresses', () => {
  it('github.com for the public API; the same host for GitHub Enterprise', () => {
    expect(githubWebBase('https://api.github.com')).toBe('https://github.com');
    expect(githubWebBase('https://github.example.com/api/v3/')).toBe('https://github.example.com');
    expect(githubWebBase('http://127.0.0.1:4000/api/v3')).toBe('http://127.0.0.1:4000');
  });
});

describe('connector settings', () => {
  it('ids fit in URLs', () => {
    expect(connectorIdPattern.test('acme-sso')).toBe(true);
    for (const bad of ['', 'Acme', '-x', 'a/b', 'a b', 'x'.repeat(64)]) expect(connectorIdPattern.test(bad)).toBe(false);
  });

  it('an OIDC issuer is an http(s) URL without credentials', () => {
    expect(oidcConfigSchema.safeParse({ issuer: 'https://sso.example.com', clientId: 'c' }).success).toBe(true);
    expect(oidcConfigSchema.safeParse({ issuer: 'https://u:p@sso.example.com', clientId: 'c' }).success).toBe(false);
    expect(oidcConfigSchema.safeParse({ issuer: 'ftp://x', clientId: 'c' }).success).toBe(false);
  });

  it('an LDAP user filter must contain {username}; the URL is ldap:// or ldaps://', () => {
    const base = { url: 'ldap://dir:389', bindDn: 'cn=svc', userBase: 'ou=people' };
    expect(ldapConfigSchema.parse(base).userFilter).toBe('(uid={username})');
    expect(ldapConfigSchema.safeParse({ ...base, userFilter: '(uid=alice)' }).success).toBe(false);
    expect(ldapConfigSchema.safeParse({ ...base, url: 'http://dir' }).success).toBe(false);
  });

  it('a stored row that does not fit its type is not used', () => {
    expect(typedConnector({ id: 'x', type: 'oidc', name: 'x', config: { issuer: 'nope' }, secret: undefined, position: 1, createdAt: 1 })).toBeUndefined();
  });
});
