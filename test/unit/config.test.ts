import { describe, it, expect } from 'vitest';
import { ConfigError, configFrom, environmentSchema, loadConfig } from '../../src/config.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      expect(err.name).toBe('ConfigError');
      expect(err.message).toBe(err.problems.join('\n'));
      return err.problems;
    }
    throw err;
  }
  throw new Error(`loadConfig(${JSON.stringify(env)}) did not throw`);
}

/** The rate limits every configuration has unless told otherwise. */
const defaultRateLimits = {
  userCode: { limit: 10, windowSeconds: 300 },
  unknownDeviceCode: { limit: 30, windowSeconds: 300 },
  deviceAuthorization: { limit: 30, windowSeconds: 60 },
  signInAccount: { limit: 5, windowSeconds: 30 },
  signInAddress: { limit: 20, windowSeconds: 30 },
  signInAccountTotal: { limit: 20, windowSeconds: 3600 },
  secondFactor: { limit: 10, windowSeconds: 60 },
  passwordReset: { limit: 5, windowSeconds: 900 },
  management: { limit: 600, windowSeconds: 60 },
};

describe('loadConfig defaults', () => {
  it('gives the documented defaults for an empty environment', () => {
    expect(loadConfig({})).toEqual({
      issuer: 'http://localhost:3000',
      issuerConfigured: false,
      port: 3000,
      host: '127.0.0.1',
      databasePath: './data/latchkey.db',
      secretKeys: undefined,
      secretKeyFile: './data/latchkey.db.key',
      bootstrapUser: undefined,
      bootstrapPassword: undefined,
      logLevel: 'info',
      logFormat: 'auto',
      signingAlg: 'RS256',
      workers: 1,
      deviceCodeTtl: 900,
      deviceInterval: 5,
      accessTokenTtl: 86400,
      refreshTokenTtl: 30 * 86400,
      browserRefreshLifetime: 86400,
      refreshTokenIdleTtl: 14 * 86400,
      refreshReuseGrace: 5,
      retryWindow: 10,
      databaseTimeout: 5,
      sessionTtl: 12 * 3600,
      housekeepingInterval: 60,
      auditRetention: 31536000,
      shutdownTimeout: 8,
      upstreamTimeout: 10,
      mfa: 'optional',
      idTokenScopeClaims: 'basic',
      defaultAudience: 'http://localhost:3000/userinfo',
      trustProxy: false,
      outboundAllow: { hosts: [], blocks: [] },
      secureCookies: false,
      metricsToken: undefined,
      productName: 'Latchkey',
      accentColor: undefined,
      smtp: undefined,
      mailFrom: { name: 'Latchkey', address: 'no-reply@localhost' },
      rateLimits: defaultRateLimits,
      settingSources: Object.fromEntries(Object.keys(environmentSchema.shape).map((name) => [name, 'default'])),
    });
  });

  it('returns a frozen object', () => {
    expect(Object.isFrozen(loadConfig({}))).toBe(true);
  });

  it('treats empty or blank values of optional text variables as unset', () => {
    const config = loadConfig({ HOST: '', LATCHKEY_DB: '  ', LATCHKEY_ISSUER: '', LATCHKEY_LOG_LEVEL: '' });
    expect(config.host).toBe('127.0.0.1');
    expect(config.databasePath).toBe('./data/latchkey.db');
    expect(config.issuer).toBe('http://localhost:3000');
    expect(config.logLevel).toBe('info');
  });

  it('treats blank numeric variables as unset too (FOO= in a unit file means the default)', () => {
    const config = loadConfig({ PORT: '', LATCHKEY_DEVICE_INTERVAL: ' ', LATCHKEY_DEVICE_CODE_TTL: '', LATCHKEY_ACCESS_TOKEN_TTL: '' });
    expect(config.port).toBe(3000);
    expect(config.deviceInterval).toBe(5);
    expect(config.deviceCodeTtl).toBe(900);
    expect(config.accessTokenTtl).toBe(86400);
  });

  it('derives the default issuer from PORT', () => {
    const config = loadConfig({ PORT: '8080' });
    expect(config.port).toBe(8080);
    expect(config.issuer).toBe('http://localhost:8080');
    expect(config.defaultAudience).toBe('http://localhost:8080/userinfo');
  });

  it('reads every variable', () => {
    expect(
      loadConfig({
        PORT: '4000',
        HOST: '0.0.0.0',
        LATCHKEY_ISSUER: 'https://id.example.com',
        LATCHKEY_DB: '/var/lib/latchkey/db.sqlite',
        LATCHKEY_BOOTSTRAP_USER: 'admin@example.com',
        LATCHKEY_BOOTSTRAP_PASSWORD: 'long enough',
        LATCHKEY_LOG_LEVEL: 'debug',
        LATCHKEY_LOG_FORMAT: 'json',
        LATCHKEY_SIGNING_ALG: 'ES256',
        LATCHKEY_WORKERS: '4',
        LATCHKEY_DEVICE_CODE_TTL: '600',
        LATCHKEY_DEVICE_INTERVAL: '3',
        LATCHKEY_ACCESS_TOKEN_TTL: '3600',
        LATCHKEY_REFRESH_TOKEN_TTL: '86400',
        LATCHKEY_BROWSER_REFRESH_LIFETIME: '7200',
        LATCHKEY_REFRESH_TOKEN_IDLE_TTL: '3600',
        LATCHKEY_REFRESH_REUSE_GRACE: '0',
        LATCHKEY_RETRY_WINDOW: '20',
        LATCHKEY_DB_TIMEOUT: '3',
        LATCHKEY_SESSION_TTL: '7200',
        LATCHKEY_DEFAULT_AUDIENCE: 'https://api.example.com',
        LATCHKEY_SECRET_KEY_FILE: '/run/secrets/latchkey.key',
        LATCHKEY_UPSTREAM_TIMEOUT: '4',
        LATCHKEY_MFA: 'required',
        LATCHKEY_ID_TOKEN_SCOPE_CLAIMS: 'none',
        LATCHKEY_AUDIT_RETENTION: '7776000',
      }),
    ).toEqual({
      issuer: 'https://id.example.com',
      issuerConfigured: true,
      port: 4000,
      host: '0.0.0.0',
      databasePath: '/var/lib/latchkey/db.sqlite',
      secretKeys: undefined,
      secretKeyFile: '/run/secrets/latchkey.key',
      bootstrapUser: 'admin@example.com',
      bootstrapPassword: 'long enough',
      logLevel: 'debug',
      logFormat: 'json',
      signingAlg: 'ES256',
      workers: 4,
      deviceCodeTtl: 600,
      deviceInterval: 3,
      accessTokenTtl: 3600,
      refreshTokenTtl: 86400,
      browserRefreshLifetime: 7200,
      refreshTokenIdleTtl: 3600,
      refreshReuseGrace: 0,
      retryWindow: 20,
      databaseTimeout: 3,
      sessionTtl: 7200,
      housekeepingInterval: 60,
      auditRetention: 7776000,
      shutdownTimeout: 8,
      upstreamTimeout: 4,
      mfa: 'required',
      idTokenScopeClaims: 'none',
      defaultAudience: 'https://api.example.com',
      trustProxy: false,
      outboundAllow: { hosts: [], blocks: [] },
      secureCookies: true,
      metricsToken: undefined,
      productName: 'Latchkey',
      accentColor: undefined,
      smtp: undefined,
      mailFrom: { name: 'Latchkey', address: 'no-reply@id.example.com' },
      rateLimits: defaultRateLimits,
      settingSources: expect.objectContaining({ LATCHKEY_ISSUER: 'environment', PORT: 'environment', LATCHKEY_SMTP_URL: 'default' }),
    });
  });

  it('LATCHKEY_SECRET_KEY: one or more keys, the first the current one; no key file then', () => {
    const a = 'A'.repeat(43);
    const b = 'ab'.repeat(32);
    const config = loadConfig({ LATCHKEY_SECRET_KEY: `${a}, ${b}` });
    expect(config.secretKeys?.map((k) => k.key.length)).toEqual([32, 32]);
    expect(config.secretKeys?.[0]?.key).toEqual(Buffer.from(a, 'base64url'));
    expect(config.secretKeys?.[1]?.key).toEqual(Buffer.from(b, 'hex'));
    expect(config.secretKeyFile).toBeUndefined();
  });

  it('LATCHKEY_SECRET_KEY that is not a 256-bit key is refused without repeating it', () => {
    for (const value of ['short', 'A'.repeat(42), `${'A'.repeat(43)},oops`, 'g'.repeat(64)]) {
      const problems = problemsOf({ LATCHKEY_SECRET_KEY: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^LATCHKEY_SECRET_KEY must be one or more 256-bit keys/);
      expect(problems[0]).not.toContain(value);
    }
  });

  it('a postgres:// database needs LATCHKEY_SECRET_KEY (every instance must share the key)', () => {
    expect(problemsOf({ LATCHKEY_DB: 'postgres://u@db/latchkey' })).toEqual([
      expect.stringMatching(/^LATCHKEY_SECRET_KEY must be set when LATCHKEY_DB is a postgres:\/\/ URL/),
    ]);
    expect(loadConfig({ LATCHKEY_DB: 'postgres://u@db/latchkey', LATCHKEY_SECRET_KEY: 'A'.repeat(43) }).secretKeyFile).toBeUndefined();
  });

  it('an in-memory database has no key file (an ephemeral key)', () => {
    expect(loadConfig({ LATCHKEY_DB: ':memory:' }).secretKeyFile).toBeUndefined();
  });

  it('configFrom validates overrides the same way', () => {
    expect(configFrom({ LATCHKEY_ISSUER: 'http://latchkey.test' }).issuer).toBe('http://latchkey.test');
    expect(() => configFrom({ PORT: 'abc' })).toThrow(ConfigError);
  });
});

describe('LATCHKEY_ISSUER', () => {
  it('strips a trailing slash', () => {
    const config = loadConfig({ LATCHKEY_ISSUER: 'https://id.example.com/' });
    expect(config.issuer).toBe('https://id.example.com');
    expect(config.defaultAudience).toBe('https://id.example.com/userinfo');
  });

  it('strips several trailing slashes and keeps a path', () => {
    expect(loadConfig({ LATCHKEY_ISSUER: 'https://example.com/auth///' }).issuer).toBe('https://example.com/auth');
  });

  it('turns on secure cookies for an https issuer', () => {
    expect(loadConfig({ LATCHKEY_ISSUER: 'https://id.example.com' }).secureCookies).toBe(true);
  });

  it('keeps secure cookies off for an http issuer', () => {
    expect(loadConfig({ LATCHKEY_ISSUER: 'http://id.example.com' }).secureCookies).toBe(false);
  });

  it('rejects an issuer with an empty query ("?" alone is still a query component)', () => {
    const problems = problemsOf({ LATCHKEY_ISSUER: 'https://id.example.com/?' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('LATCHKEY_ISSUER');
  });

  it('rejects an issuer with an empty fragment', () => {
    const problems = problemsOf({ LATCHKEY_ISSUER: 'https://id.example.com/#' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('LATCHKEY_ISSUER');
  });
});

describe('LATCHKEY_PRODUCT_NAME and LATCHKEY_ACCENT_COLOR', () => {
  it('set the name and a normalised accent colour', () => {
    const config = loadConfig({ LATCHKEY_PRODUCT_NAME: 'Acme Sign-in', LATCHKEY_ACCENT_COLOR: '#F0A' });
    expect(config.productName).toBe('Acme Sign-in');
    expect(config.accentColor).toBe('#ff00aa');
  });

  for (const bad of ['red', '#12345', 'ff00aa', '#ggg']) {
    it(`refuse the colour ${bad}`, () => {
      expect(() => loadConfig({ LATCHKEY_ACCENT_COLOR: bad })).toThrow('LATCHKEY_ACCENT_COLOR must be a hex colour such as #3451d1');
    });
  }
});

describe('rate limits', () => {
  it('take COUNT/SECONDS or off', () => {
    const config = loadConfig({ LATCHKEY_RATE_LIMIT_USER_CODE: '3/60', LATCHKEY_RATE_LIMIT_SIGNIN_ACCOUNT: 'off' });
    expect(config.rateLimits.userCode).toEqual({ limit: 3, windowSeconds: 60 });
    expect(config.rateLimits.signInAccount).toBeUndefined();
  });

  for (const bad of ['10', '0/60', '10/0', 'ten/60', '10/60/5', '-1/60']) {
    it(`refuses ${bad} with one line naming the variable`, () => {
      expect(() => loadConfig({ LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION: bad })).toThrow(
        'LATCHKEY_RATE_LIMIT_DEVICE_AUTHORIZATION must be COUNT/SECONDS (for example 30/60) or off',
      );
    });
  }
});

describe('mail: LATCHKEY_SMTP_URL, LATCHKEY_MAIL_FROM, LATCHKEY_RATE_LIMIT_PASSWORD_RESET', () => {
  it('LATCHKEY_SMTP_URL smtp://user:password@host:port is taken apart; the password is kept but never printed with the config', () => {
    const config = loadConfig({ LATCHKEY_SMTP_URL: 'smtp://mailer%40acme:s3cret%2Fpass@mail.example.com:2525' });
    expect(config.smtp).toEqual({ secure: false, host: 'mail.example.com', port: 2525, user: 'mailer@acme' });
    expect(config.smtp?.password).toBe('s3cret/pass');
    expect(JSON.stringify(config)).not.toContain('s3cret');
    expect(Object.isFrozen(config.smtp)).toBe(true);
  });

  it('smtps:// is TLS from the start on port 465 by default; smtp:// defaults to 587; no credentials is fine', () => {
    expect(loadConfig({ LATCHKEY_SMTP_URL: 'smtps://mail.example.com' }).smtp).toEqual({ secure: true, host: 'mail.example.com', port: 465, user: undefined });
    expect(loadConfig({ LATCHKEY_SMTP_URL: 'smtp://127.0.0.1/' }).smtp).toEqual({ secure: false, host: '127.0.0.1', port: 587, user: undefined });
    expect(loadConfig({ LATCHKEY_SMTP_URL: 'smtp://[::1]:25' }).smtp).toMatchObject({ host: '::1', port: 25 });
    expect(loadConfig({ LATCHKEY_SMTP_URL: '' }).smtp).toBeUndefined();
  });

  for (const [bad, why] of [
    ['http://user:hunter2@mail.example.com', 'another scheme'],
    ['smtps://user:hunter2@', 'no host'],
    ['smtp://user:hunter2@mail.example.com:25/path', 'a path'],
    ['smtp://user:hunter2@mail.example.com?tls=off', 'a query'],
    ['smtp://user:hunter2@mail.example.com:0', 'port 0'],
    ['smtp://:hunter2@mail.example.com', 'a password without a user'],
    ['smtp://user:hunter2%zz@mail.example.com', 'a broken percent-encoding'],
    ['mail.example.com:25', 'not a URL'],
  ] as const) {
    it(`LATCHKEY_SMTP_URL refuses ${why}, naming the variable and never repeating the value`, () => {
      const problems = problemsOf({ LATCHKEY_SMTP_URL: bad });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^LATCHKEY_SMTP_URL must be smtp:/);
      expect(problems[0]).not.toContain('hunter2');
    });
  }

  it('LATCHKEY_MAIL_FROM takes "Name <address>" or a bare address; by default the product name and no-reply@ the issuer host', () => {
    expect(loadConfig({ LATCHKEY_MAIL_FROM: 'Acme Sign-in <id@acme.example>' }).mailFrom).toEqual({ name: 'Acme Sign-in', address: 'id@acme.example' });
    expect(loadConfig({ LATCHKEY_MAIL_FROM: '"Acme, Inc." <id@acme.example>' }).mailFrom).toEqual({ name: 'Acme, Inc.', address: 'id@acme.example' });
    expect(loadConfig({ LATCHKEY_MAIL_FROM: 'id@acme.example' }).mailFrom).toEqual({ name: undefined, address: 'id@acme.example' });
    expect(loadConfig({ LATCHKEY_ISSUER: 'https://sso.acme.example:8443/id', LATCHKEY_PRODUCT_NAME: 'Acme' }).mailFrom).toEqual({
      name: 'Acme',
      address: 'no-reply@sso.acme.example',
    });
  });

  for (const bad of ['not an address', 'Acme <>', 'a@b, c@d', 'Acme <a@b> extra', 'x<y> <a@b.example>', 'a@b\r\nBcc: c@d']) {
    it(`LATCHKEY_MAIL_FROM refuses ${JSON.stringify(bad)}`, () => {
      const problems = problemsOf({ LATCHKEY_MAIL_FROM: bad });
      expect(problems).toEqual(['LATCHKEY_MAIL_FROM must be an address such as no-reply@example.com or Name <no-reply@example.com>']);
    });
  }

  it('LATCHKEY_RATE_LIMIT_MANAGEMENT is 600/60 by default, or COUNT/SECONDS, or off', () => {
    expect(loadConfig({}).rateLimits.management).toEqual({ limit: 600, windowSeconds: 60 });
    expect(loadConfig({ LATCHKEY_RATE_LIMIT_MANAGEMENT: '2/60' }).rateLimits.management).toEqual({ limit: 2, windowSeconds: 60 });
    expect(loadConfig({ LATCHKEY_RATE_LIMIT_MANAGEMENT: 'off' }).rateLimits.management).toBeUndefined();
  });

  it('LATCHKEY_RATE_LIMIT_PASSWORD_RESET is 5/900 by default, or COUNT/SECONDS, or off', () => {
    expect(loadConfig({}).rateLimits.passwordReset).toEqual({ limit: 5, windowSeconds: 900 });
    expect(loadConfig({ LATCHKEY_RATE_LIMIT_PASSWORD_RESET: '2/60' }).rateLimits.passwordReset).toEqual({ limit: 2, windowSeconds: 60 });
    expect(loadConfig({ LATCHKEY_RATE_LIMIT_PASSWORD_RESET: 'off' }).rateLimits.passwordReset).toBeUndefined();
    expect(problemsOf({ LATCHKEY_RATE_LIMIT_PASSWORD_RESET: '5' })).toEqual([
      'LATCHKEY_RATE_LIMIT_PASSWORD_RESET must be COUNT/SECONDS (for example 5/900) or off',
    ]);
  });
});

describe('LATCHKEY_TRUST_PROXY', () => {
  it('is off by default and with false or 0', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ LATCHKEY_TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ LATCHKEY_TRUST_PROXY: '0' }).trustProxy).toBe(false);
  });

  it('takes a number of hops or a list of addresses and CIDR blocks', () => {
    expect(loadConfig({ LATCHKEY_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ LATCHKEY_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,fd00::/8' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
  });

  for (const bad of ['true', 'yes', '10.0.0.0/33', '999.1.1.1', 'fd00::/129', '10.0.0.1/8/9', '100']) {
    it(`refuses ${bad}`, () => {
      expect(() => loadConfig({ LATCHKEY_TRUST_PROXY: bad })).toThrow(/LATCHKEY_TRUST_PROXY/);
    });
  }
});

describe('LATCHKEY_OUTBOUND_ALLOW', () => {
  it('takes host names, addresses and CIDR blocks, comma-separated; empty allows nothing beyond public addresses', () => {
    const allow = loadConfig({ LATCHKEY_OUTBOUND_ALLOW: ' JWKS.Corp.Example. ,10.20.0.0/16, 127.0.0.1,fd00::/8,[::1]' }).outboundAllow;
    expect(allow.hosts).toEqual(['jwks.corp.example']);
    expect(allow.blocks.map((b) => b.bits)).toEqual([96 + 16, 96 + 32, 8, 128]);
    expect(loadConfig({ LATCHKEY_OUTBOUND_ALLOW: '' }).outboundAllow).toEqual({ hosts: [], blocks: [] });
  });

  for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0.1/8/9', 'https://jwks.corp.example', 'jwks.corp.example:8443', 'under score?', '999.1.1.1', 'a..b']) {
    it(`refuses ${bad} with one line naming the variable`, () => {
      let problems: string[] = [];
      try {
        loadConfig({ LATCHKEY_OUTBOUND_ALLOW: `jwks.corp.example,${bad}` });
      } catch (err) {
        problems = (err as ConfigError).problems;
      }
      expect(problems).toEqual([
        'LATCHKEY_OUTBOUND_ALLOW must be a comma-separated list of host names, IP addresses and CIDR blocks (for example jwks.corp.example,10.20.0.0/16)',
      ]);
    });
  }
});

describe('LATCHKEY_DEFAULT_AUDIENCE', () => {
  it('is honoured instead of <issuer>/userinfo', () => {
    const config = loadConfig({ LATCHKEY_ISSUER: 'https://id.example.com', LATCHKEY_DEFAULT_AUDIENCE: 'https://api.example.com' });
    expect(config.defaultAudience).toBe('https://api.example.com');
    expect(config.issuer).toBe('https://id.example.com');
  });
});

describe('ConfigError: one line per bad variable', () => {
  const single: Array<[string, string, string]> = [
    ['PORT', 'abc', 'not a number'],
    ['PORT', '70000', 'above 65535'],
    ['PORT', '-1', 'negative'],
    ['PORT', '99999999999999999999', 'beyond the safe integer range'],
    ['LATCHKEY_DEVICE_INTERVAL', '0', 'below the minimum'],
    ['LATCHKEY_DEVICE_INTERVAL', '601', 'above the maximum'],
    ['LATCHKEY_ACCESS_TOKEN_TTL', '1.5', 'fractional'],
    ['LATCHKEY_ACCESS_TOKEN_TTL', '1h', 'with a unit'],
    ['LATCHKEY_DEVICE_CODE_TTL', '99999999999999999999', 'beyond the safe integer range'],
    ['LATCHKEY_ISSUER', 'ftp://x', 'a non-http scheme'],
    ['LATCHKEY_ISSUER', 'http://x/?a=1', 'a query'],
    ['LATCHKEY_ISSUER', 'https://x/#frag', 'a fragment'],
    ['LATCHKEY_ISSUER', 'not a url', 'not a URL'],
    ['LATCHKEY_LOG_LEVEL', 'loud', 'an unknown level'],
    ['LATCHKEY_SIGNING_ALG', 'HS256', 'a symmetric algorithm'],
    ['LATCHKEY_SIGNING_ALG', 'es256', 'the wrong case'],
    ['LATCHKEY_SIGNING_ALG', 'none', 'no signature'],
    ['LATCHKEY_WORKERS', '0', 'no process'],
    ['LATCHKEY_WORKERS', '65', 'above the maximum'],
    ['LATCHKEY_WORKERS', 'two', 'not a number'],
    ['LATCHKEY_WORKERS', '1.5', 'fractional'],
    ['LATCHKEY_RETRY_WINDOW', '31', 'a lost answer is recovered for seconds, not minutes'],
    ['LATCHKEY_BOOTSTRAP_PASSWORD', 'short', 'too short'],
    ['LATCHKEY_BOOTSTRAP_USER', 'has space', 'bad characters'],
  ];
  it('LATCHKEY_RETRY_WINDOW above 30 names the variable and its limit', () => {
    expect(problemsOf({ LATCHKEY_RETRY_WINDOW: '300' })).toEqual(['LATCHKEY_RETRY_WINDOW must be at most 30']);
  });
  for (const [variable, value, why] of single) {
    it(`${variable}=${value} (${why})`, () => {
      const problems = problemsOf({ [variable]: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain(variable);
    });
  }

  it('reports several bad variables at once, one line each', () => {
    const variables = ['PORT', 'LATCHKEY_DEVICE_INTERVAL', 'LATCHKEY_LOG_LEVEL', 'LATCHKEY_ISSUER', 'LATCHKEY_BOOTSTRAP_PASSWORD'];
    const problems = problemsOf({
      PORT: 'abc',
      LATCHKEY_DEVICE_INTERVAL: '0',
      LATCHKEY_LOG_LEVEL: 'loud',
      LATCHKEY_ISSUER: 'ftp://x',
      LATCHKEY_BOOTSTRAP_PASSWORD: 'short',
      HOST: '0.0.0.0',
    });
    expect(problems).toHaveLength(variables.length);
    const named = problems.map((line) => variables.filter((v) => line.includes(v)));
    // LATCHKEY_ISSUER lines do not mention other variables, and so on: each line names exactly one.
    expect(named.map((v) => v.length)).toEqual(variables.map(() => 1));
    expect(named.map((v) => v[0]).sort()).toEqual([...variables].sort());
  });
});
