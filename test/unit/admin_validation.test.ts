import { describe, it, expect } from 'vitest';
import {
  AdminInputError,
  minPasswordLength,
  validApiIdentifier,
  validClientId,
  validEmail,
  validGrantTypes,
  validName,
  validPassword,
  validRedirectUri,
  validUsername,
} from '../../src/directory/validation.js';
import { isLoopbackHost } from '../../src/oauth/redirect.js';

function refusal(fn: () => unknown): AdminInputError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AdminInputError) return err;
    throw err;
  }
  throw new Error('did not throw');
}

describe('validUsername', () => {
  for (const ok of ['alice', 'a', 'Alice.Smith', 'bob_1', 'carol-d', 'dave@example.com', 'x'.repeat(64)]) {
    it(`accepts ${JSON.stringify(ok.length > 20 ? `${ok.slice(0, 8)}…(${ok.length})` : ok)}`, () => {
      expect(validUsername(ok)).toBe(ok);
    });
  }
  for (const bad of ['', 'x'.repeat(65), 'al ice', 'ålice', 'a/b', 'a:b', 'a+b', '<script>', ' alice']) {
    it(`rejects ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…(${bad.length})` : bad)}`, () => {
      const err = refusal(() => validUsername(bad));
      expect(err.name).toBe('AdminInputError');
      expect(err.message).toContain('is not a valid username');
    });
  }
});

describe('validEmail', () => {
  it('accepts a plain address', () => {
    expect(validEmail('alice@example.com')).toBe('alice@example.com');
    expect(validEmail('a@b')).toBe('a@b');
  });
  it('requires a value', () => {
    expect(refusal(() => validEmail(undefined)).message).toBe('--email is required');
    expect(refusal(() => validEmail('')).message).toBe('--email is required');
  });
  for (const bad of [
    'alice',
    '@example.com',
    'alice@',
    'al ice@example.com',
    'a@b@c',
    `${'a'.repeat(250)}@b.co`,
    'a@b.c\r\nBcc: x@y',
    'a\x1b[31m@b.c',
    'a@b.c\u0085',
    'a\u202e@b.c',
  ]) {
    it(`rejects ${JSON.stringify(bad.slice(0, 30))}`, () => {
      expect(refusal(() => validEmail(bad)).message).toContain('is not a valid email address');
    });
  }
});

describe('validName', () => {
  it('trims, and treats blank as no name', () => {
    expect(validName('  Alice Example ')).toBe('Alice Example');
    expect(validName('   ')).toBeUndefined();
    expect(validName(undefined)).toBeUndefined();
  });
  it('rejects more than 256 characters', () => {
    expect(validName('x'.repeat(256))).toBe('x'.repeat(256));
    expect(refusal(() => validName('x'.repeat(257))).message).toBe('--name must be at most 256 characters');
  });
  it('rejects control characters and direction overrides, keeps right-to-left names and their marks', () => {
    for (const bad of ['\x1b[2JAlice', 'Alice\r\nBob', 'Alice\u007f', 'Alice\u009b', 'Alice\u202eecilA', 'A\u2028B']) {
      expect(refusal(() => validName(bad)).message, JSON.stringify(bad)).toContain('must not contain control characters');
    }
    expect(validName('عربي\u200f مثال')).toBe('عربي\u200f مثال');
  });
});

describe('validPassword', () => {
  it('needs at least 8 characters', () => {
    expect(minPasswordLength).toBe(8);
    expect(validPassword('12345678')).toBe('12345678');
    expect(refusal(() => validPassword('1234567')).message).toBe('the password must be at least 8 characters');
    expect(refusal(() => validPassword('')).message).toBe('the password must be at least 8 characters');
  });
  it('allows at most 1024 characters', () => {
    expect(validPassword('p'.repeat(1024))).toBe('p'.repeat(1024));
    expect(refusal(() => validPassword('p'.repeat(1025))).message).toBe('the password must be at most 1024 characters');
  });
});

describe('validClientId', () => {
  it("refuses a UUID, which could be taken for a person's sub (RFC 9068 §5)", () => {
    expect(refusal(() => validClientId('0f8fad5b-d9cb-469f-a165-70867728950e')).message).toContain('looks like a user id');
    expect(refusal(() => validClientId('0F8FAD5B-D9CB-469F-A165-70867728950E')).message).toContain('looks like a user id');
  });

  for (const ok of ['cli', 'my-app', 'my_app.v2', 'urn:example:app', 'a~b', 'x'.repeat(128)]) {
    it(`accepts ${JSON.stringify(ok.slice(0, 20))}`, () => {
      expect(validClientId(ok)).toBe(ok);
    });
  }
  for (const bad of ['', 'x'.repeat(129), 'my app', 'a/b', 'a@b', 'é', 'a?b']) {
    it(`rejects ${JSON.stringify(bad.slice(0, 20))}`, () => {
      expect(refusal(() => validClientId(bad)).message).toContain('is not a valid client_id');
    });
  }
});

describe('validRedirectUri', () => {
  const noWarning: string[] = [
    'https://app.example.com/callback',
    'https://app.example.com/cb?x=1',
    'http://127.0.0.1:8080/callback',
    'http://localhost/callback',
    'http://localhost:53682/',
    'http://[::1]:9000/cb',
    'com.example.app:/callback',
    'com.example.app:/cb',
  ];
  for (const uri of noWarning) {
    it(`accepts ${uri} without a warning`, () => {
      expect(validRedirectUri(uri)).toEqual({ uri, warning: undefined });
    });
  }

  it('accepts http to a non-loopback host WITH a warning', () => {
    const uri = 'http://app.example.com/callback';
    const result = validRedirectUri(uri);
    expect(result.uri).toBe(uri);
    expect(result.warning).toBe(`redirect URI ${uri} is plain http to a host that is not loopback; use https outside development`);
  });

  it('warns for 127.0.0.2 (only 127.0.0.1, [::1] and localhost are loopback here)', () => {
    expect(validRedirectUri('http://127.0.0.2/cb').warning).toContain('not loopback');
  });

  it('rejects a fragment, even an empty one', () => {
    expect(refusal(() => validRedirectUri('https://app.example.com/cb#x')).message).toContain('must not have a fragment');
    expect(refusal(() => validRedirectUri('https://app.example.com/cb#')).message).toContain('must not have a fragment');
  });

  for (const relative of ['/callback', 'callback', '//app.example.com/cb', '']) {
    it(`rejects the relative reference ${JSON.stringify(relative)}`, () => {
      expect(refusal(() => validRedirectUri(relative)).message).toContain('is not an absolute URI');
    });
  }

  for (const [uri, scheme] of [
    ['javascript:alert(1)', 'javascript'],
    ['JavaScript:alert(1)', 'javascript'],
    ['data:text/html,hi', 'data'],
    ['file:///etc/passwd', 'file'],
    ['vbscript:msgbox', 'vbscript'],
  ] as const) {
    it(`rejects ${uri}`, () => {
      expect(refusal(() => validRedirectUri(uri)).message).toBe(`redirect URI scheme "${scheme}:" is not allowed`);
    });
  }

  it('rejects a private-use scheme that is not a reverse domain name', () => {
    expect(refusal(() => validRedirectUri('myapp:/cb')).message).toContain('must be a reverse domain name');
  });

  it('rejects more than 2048 characters', () => {
    const uri = `https://app.example.com/${'a'.repeat(2048)}`;
    expect(refusal(() => validRedirectUri(uri)).message).toBe('a redirect URI must be at most 2048 characters');
  });

  it('isLoopbackHost', () => {
    expect(['127.0.0.1', '[::1]', 'localhost', 'example.com', '127.0.0.2'].map(isLoopbackHost)).toEqual([true, true, true, false, false]);
  });
});

describe('validGrantTypes', () => {
  it('defaults to authorization_code and refresh_token', () => {
    expect(validGrantTypes(undefined)).toEqual(['authorization_code', 'refresh_token']);
    expect(validGrantTypes([])).toEqual(['authorization_code', 'refresh_token']);
  });

  it('keeps the given order', () => {
    expect(validGrantTypes(['refresh_token', 'device_code', 'authorization_code'])).toEqual(['refresh_token', 'device_code', 'authorization_code']);
  });

  it('maps the device code URN to device_code', () => {
    expect(validGrantTypes(['urn:ietf:params:oauth:grant-type:device_code'])).toEqual(['device_code']);
  });

  it('removes duplicates, including an alias of a name already given', () => {
    expect(validGrantTypes(['device_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'device_code'])).toEqual([
      'device_code',
      'refresh_token',
    ]);
  });

  it('accepts client_credentials (machine clients)', () => {
    expect(validGrantTypes(['client_credentials'])).toEqual(['client_credentials']);
  });

  for (const bad of ['implicit', 'password', 'Client_Credentials', 'Device_Code', '', 'toString', '__proto__']) {
    it(`rejects ${JSON.stringify(bad)}`, () => {
      expect(refusal(() => validGrantTypes(['device_code', bad])).message).toContain(`unknown grant type "${bad}"`);
    });
  }
});

describe('validApiIdentifier', () => {
  it('accepts a URL or any token without spaces', () => {
    expect(validApiIdentifier('https://api.example.com')).toBe('https://api.example.com');
    expect(validApiIdentifier('urn:example:api')).toBe('urn:example:api');
    expect(validApiIdentifier('x'.repeat(2048))).toBe('x'.repeat(2048));
  });
  for (const [name, bad] of [
    ['empty', ''],
    ['a space', 'https://api.example.com/a b'],
    ['a tab', 'api\tone'],
    ['a newline', 'api\n'],
    ['2049 characters', 'x'.repeat(2049)],
  ] as const) {
    it(`rejects ${name}`, () => {
      expect(refusal(() => validApiIdentifier(bad)).message).toContain('an API identifier must be 1-2048 characters');
    });
  }
});
