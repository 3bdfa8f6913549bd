/** The pure parts of the connectors: filter escaping, usernames, groups, upstream attributes, settings. */
import { describe, expect, it } from 'vitest';
import { escapeFilterValue, userFilter } from '../../src/connectors/ldap_filter.js';
import { usernameCandidates } from '../../src/connectors/accounts.js';
import { cleanGroups, UpstreamError } from '../../src/connectors/upstream_profile.js';
import { checkedProfile } from '../../src/connectors/upstream_attributes.js';
import { githubWebBase } from '../../src/connectors/github_upstream.js';
import { connectorIdPattern, ldapConfigSchema, oidcConfigSchema, typedConnector } from '../../src/connectors/connector_config.js';
import { freshSignInAsked } from '../../src/connectors/runtime.js';
import { isUnreachable } from '../../src/connectors/unreachable.js';
import type { Interaction } from '../../src/oauth/interaction.js';
import { toConnector } from '../../src/store/rows.js';

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
    expect(usernameCandidates(profile("Zoë O'Brien"), 'x')[0]).toBe('ZoeOBrien');
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

  it('DEL, C1 controls and direction overrides are control characters too', () => {
    expect(cleanGroups(['ops', 'x\u007f', 'y\u009b2J', 'admin\u202egnp.exe', 'عربي'])).toEqual(['ops', 'عربي']);
  });
});

describe('upstream attributes, checked as users add checks input', () => {
  const given = { subject: 'sub-1', username: 'pat', email: 'pat@example.com', emailVerified: true, name: 'Pat Example', groups: ['staff'] };

  it('keeps what users add would take', () => {
    expect(checkedProfile(given)).toEqual({ profile: given, refused: [] });
    // Right-to-left names and the marks they need (RLM, ZWNJ) are names.
    const persian = { ...given, name: 'می\u200cخواهم \u200fپت' };
    expect(checkedProfile(persian).profile.name).toBe(persian.name);
  });

  it('leaves out, never cleans up, a name, email, username or group with control characters', () => {
    const { profile, refused } = checkedProfile({
      ...given,
      name: '\x1b[2JPat',
      email: 'pat@example.com\r\nBcc: all@example.com',
      username: 'pat\x1b[0m',
      groups: ['staff', 'ops\n'],
    });
    expect(profile).toMatchObject({ name: undefined, email: undefined, emailVerified: false, username: undefined, groups: ['staff'] });
    expect(refused).toEqual(['email', 'name', 'username', 'groups']);
  });

  it('an email users add would refuse is not verified, whatever the upstream says', () => {
    for (const email of ['not-an-address', 'a b@example.com', 'pat@example.com\u0085', `${'a'.repeat(250)}@b.co`]) {
      expect(checkedProfile({ ...given, email }).profile, email).toMatchObject({ email: undefined, emailVerified: false });
    }
  });

  it('a name is trimmed; a blank one is no name (and not a refusal); a name over 256 characters is left out', () => {
    expect(checkedProfile({ ...given, name: '  Pat  ' }).profile.name).toBe('Pat');
    expect(checkedProfile({ ...given, name: '   ' })).toMatchObject({ profile: { name: undefined }, refused: [] });
    expect(checkedProfile({ ...given, name: 'x'.repeat(257) })).toMatchObject({ profile: { name: undefined }, refused: ['name'] });
  });

  it('a subject with control characters, or none, refuses the sign-in', () => {
    expect(() => checkedProfile({ ...given, subject: 'a\nb' })).toThrow(UpstreamError);
    expect(() => checkedProfile({ ...given, subject: '' })).toThrow(UpstreamError);
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

  it('an OIDC scope includes openid (an id_token is what the sign-in checks)', () => {
    expect(oidcConfigSchema.safeParse({ issuer: 'https://sso.example.com', clientId: 'c', scope: 'email openid' }).success).toBe(true);
    expect(oidcConfigSchema.safeParse({ issuer: 'https://sso.example.com', clientId: 'c', scope: 'email profile' }).success).toBe(false);
    expect(oidcConfigSchema.safeParse({ issuer: 'https://sso.example.com', clientId: 'c', scope: 'openidx' }).success).toBe(false);
  });

  it('an LDAP user filter must contain {username}; the URL is ldap:// or ldaps://', () => {
    const base = { url: 'ldap://dir:389', bindDn: 'cn=svc', userBase: 'ou=people' };
    expect(ldapConfigSchema.parse(base).userFilter).toBe('(uid={username})');
    expect(ldapConfigSchema.safeParse({ ...base, userFilter: '(uid=alice)' }).success).toBe(false);
    expect(ldapConfigSchema.safeParse({ ...base, url: 'http://dir' }).success).toBe(false);
    // Credentials in the URL would be stored in the clear: the bind password comes on stdin.
    expect(ldapConfigSchema.safeParse({ ...base, url: 'ldap://admin:secret@dir:389' }).success).toBe(false);
  });

  it('a stored row that does not fit its type is not used', () => {
    expect(
      typedConnector({ id: 'x', type: 'oidc', name: 'x', config: { issuer: 'nope' }, secret: undefined, position: 1, createdAt: 1, managedBy: undefined }),
    ).toBeUndefined();
  });

  it('a settings column that is not a JSON object reads as empty settings (then refused), not an exception', () => {
    const row = { id: 'x', type: 'oidc', name: 'x', secret: null, position: 1, created_at: 1 };
    for (const config of ['{not json', '[1,2]', 'null', '"text"']) {
      const record = toConnector({ ...row, config });
      expect(record.config).toEqual({});
      expect(typedConnector(record)).toBeUndefined();
    }
  });
});

describe('a fresh sign-in asked of an upstream', () => {
  const interaction = (prompt: string[], maxAge: number | undefined) => ({ request: { prompt }, maxAge }) as unknown as Interaction;
  it('prompt=login or max_age ask for one; nothing else does', () => {
    expect(freshSignInAsked(undefined)).toBeUndefined();
    expect(freshSignInAsked(interaction([], undefined))).toBeUndefined();
    expect(freshSignInAsked(interaction(['consent'], undefined))).toBeUndefined();
    expect(freshSignInAsked(interaction(['login'], undefined))).toEqual({ promptLogin: true, maxAge: undefined });
    expect(freshSignInAsked(interaction([], 0))).toEqual({ promptLogin: false, maxAge: 0 });
  });
});

describe('an upstream that could not be reached, told from one that answered wrongly', () => {
  const withCause = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause });
  it('timeouts, DNS failures and refused, reset or unroutable connections, however deeply wrapped', () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'ENOTFOUND',
      'EAI_AGAIN',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ETIMEDOUT',
      'UND_ERR_CONNECT_TIMEOUT',
      'OAUTH_TIMEOUT',
    ]) {
      expect(isUnreachable(Object.assign(new Error('x'), { code })), code).toBe(true);
      expect(isUnreachable(new Error('wrapped', { cause: withCause(Object.assign(new Error('y'), { code })) })), code).toBe(true);
    }
    expect(isUnreachable(new DOMException('timed out', 'TimeoutError'))).toBe(true);
    expect(isUnreachable(withCause(undefined))).toBe(true);
  });
  it('not an answer that was wrong', () => {
    expect(isUnreachable(new Error('unexpected JWT claim value encountered'))).toBe(false);
    expect(isUnreachable(Object.assign(new Error('x'), { code: 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' }))).toBe(false);
    expect(isUnreachable(new TypeError('Cannot read properties of undefined'))).toBe(false);
    expect(isUnreachable(undefined)).toBe(false);
  });
});
