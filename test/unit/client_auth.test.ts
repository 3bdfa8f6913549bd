import { describe, it, expect } from 'vitest';
import { OAuthError } from '../../src/errors.js';
import { authenticateClient, readClientCredentials, requireGrantType } from '../../src/oauth/client_auth.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';
import { addClient } from '../helpers/app.js';
import { client as clientRecord } from '../helpers/records.js';

const challenge = 'Basic realm="latchkey", charset="UTF-8"';

/** RFC 6749 §2.3.1: each part form-urlencoded, then joined with ':' and base64-encoded. */
function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}
function basic(id: string, secret: string, encode = true): string {
  const raw = encode ? `${formEncode(id)}:${formEncode(secret)}` : `${id}:${secret}`;
  return `Basic ${Buffer.from(raw, 'utf8').toString('base64')}`;
}

function caught(fn: () => unknown): OAuthError {
  try {
    fn();
  } catch (err) {
    if (err instanceof OAuthError) return err;
    throw err;
  }
  throw new Error('did not throw');
}

async function rejected(promise: Promise<unknown>): Promise<OAuthError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof OAuthError) return err;
    throw err;
  }
  throw new Error('did not reject');
}

function expectInvalidClient(err: OAuthError): void {
  expect(err.code).toBe('invalid_client');
  expect(err.status).toBe(401);
  expect(err.headers).toEqual({ 'www-authenticate': challenge });
  expect(err.toJSON()).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
}

describe('readClientCredentials', () => {
  it('none: client_id only', () => {
    expect(readClientCredentials(undefined, { client_id: 'cli' })).toEqual({ clientId: 'cli', clientSecret: undefined, method: 'none' });
  });

  it('none: nothing at all', () => {
    expect(readClientCredentials(undefined, {})).toEqual({ clientId: undefined, clientSecret: undefined, method: 'none' });
  });

  it('ignores a non-Basic Authorization header', () => {
    expect(readClientCredentials('Bearer abc', { client_id: 'cli' })).toEqual({ clientId: 'cli', clientSecret: undefined, method: 'none' });
  });

  it('client_secret_post: client_id and client_secret in the body', () => {
    expect(readClientCredentials(undefined, { client_id: 'svc', client_secret: 's3cret' })).toEqual({
      clientId: 'svc',
      clientSecret: 's3cret',
      method: 'client_secret_post',
    });
  });

  it('client_secret_basic', () => {
    expect(readClientCredentials(basic('svc', 's3cret'), {})).toEqual({ clientId: 'svc', clientSecret: 's3cret', method: 'client_secret_basic' });
  });

  it('client_secret_basic with a lower-case scheme', () => {
    expect(readClientCredentials(basic('svc', 's3cret').replace('Basic', 'basic'), {})).toEqual({
      clientId: 'svc',
      clientSecret: 's3cret',
      method: 'client_secret_basic',
    });
  });

  it('client_secret_basic: a raw ":" in the secret belongs to the secret (split at the first colon)', () => {
    expect(readClientCredentials(basic('svc', 'a:b:c', false), {})).toMatchObject({ clientId: 'svc', clientSecret: 'a:b:c' });
  });

  it('client_secret_basic: %3A decodes to ":" in id and secret', () => {
    const header = `Basic ${Buffer.from('my%3Aapp:a%3Ab').toString('base64')}`;
    expect(readClientCredentials(header, {})).toEqual({ clientId: 'my:app', clientSecret: 'a:b', method: 'client_secret_basic' });
  });

  it('client_secret_basic: "+" decodes to a space and %2B to "+"', () => {
    const header = `Basic ${Buffer.from('svc:one+two%2Bthree').toString('base64')}`;
    expect(readClientCredentials(header, {})).toMatchObject({ clientSecret: 'one two+three' });
  });

  it('client_secret_basic: round-trips form-encoded secrets with reserved characters', () => {
    const secret = 'p@ss w:rd/+%&=é';
    expect(readClientCredentials(basic('svc:1', secret), {})).toEqual({ clientId: 'svc:1', clientSecret: secret, method: 'client_secret_basic' });
  });

  it('client_secret_basic with the same client_id in the body is accepted', () => {
    expect(readClientCredentials(basic('svc', 's3cret'), { client_id: 'svc' })).toEqual({
      clientId: 'svc',
      clientSecret: 's3cret',
      method: 'client_secret_basic',
    });
  });

  it('Basic plus client_secret in the body is invalid_request (two methods)', () => {
    const err = caught(() => readClientCredentials(basic('svc', 's3cret'), { client_id: 'svc', client_secret: 's3cret' }));
    expect(err.code).toBe('invalid_request');
    expect(err.status).toBe(400);
  });

  it('Basic with a different client_id in the body is invalid_request', () => {
    const err = caught(() => readClientCredentials(basic('svc', 's3cret'), { client_id: 'other' }));
    expect(err.code).toBe('invalid_request');
    expect(err.status).toBe(400);
  });

  it('Basic without a colon is invalid_client', () => {
    expectInvalidClient(caught(() => readClientCredentials(`Basic ${Buffer.from('svc').toString('base64')}`, {})));
  });

  it('Basic that is not base64 at all is invalid_client', () => {
    expectInvalidClient(caught(() => readClientCredentials('Basic !!!!', {})));
  });

  it('Basic with broken percent-encoding is invalid_client', () => {
    expectInvalidClient(caught(() => readClientCredentials(`Basic ${Buffer.from('svc:%ZZ').toString('base64')}`, {})));
    expectInvalidClient(caught(() => readClientCredentials(`Basic ${Buffer.from('%E0%A4%A:x').toString('base64')}`, {})));
  });
});

describe('authenticateClient', () => {
  it('unknown client_id → invalid_client, 401 with WWW-Authenticate', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      expectInvalidClient(await rejected(authenticateClient({ store }, { clientId: 'nobody', clientSecret: undefined, method: 'none' })));
    } finally {
      await store.close();
    }
  });

  it('missing or empty client_id → invalid_request', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      const missing = await rejected(authenticateClient({ store }, { clientId: undefined, clientSecret: undefined, method: 'none' }));
      expect(missing.code).toBe('invalid_request');
      expect(missing.status).toBe(400);
      const empty = await rejected(authenticateClient({ store }, { clientId: '', clientSecret: 'x', method: 'client_secret_post' }));
      expect(empty.code).toBe('invalid_request');
    } finally {
      await store.close();
    }
  });

  it('a public client identified by client_id alone', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      const { client } = await addClient(store, 'cli', { grantTypes: ['device_code'] });
      expect(await authenticateClient({ store }, { clientId: 'cli', clientSecret: undefined, method: 'none' })).toEqual(client);
    } finally {
      await store.close();
    }
  });

  it('a public client presenting a secret → invalid_client', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      await addClient(store, 'cli');
      expectInvalidClient(await rejected(authenticateClient({ store }, { clientId: 'cli', clientSecret: 'anything', method: 'client_secret_post' })));
    } finally {
      await store.close();
    }
  });

  it('a public client sending an empty secret (as some libraries do) is just a public client', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      await addClient(store, 'cli');
      expect((await authenticateClient({ store }, { clientId: 'cli', clientSecret: '', method: 'client_secret_basic' })).clientId).toBe('cli');
      expect((await authenticateClient({ store }, { clientId: 'cli', clientSecret: '', method: 'client_secret_post' })).clientId).toBe('cli');
    } finally {
      await store.close();
    }
  });

  it('a confidential client without a secret → invalid_client', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      await addClient(store, 'svc', { confidential: true });
      expectInvalidClient(await rejected(authenticateClient({ store }, { clientId: 'svc', clientSecret: undefined, method: 'none' })));
    } finally {
      await store.close();
    }
  });

  it('a confidential client with a wrong secret → invalid_client', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      const { secret } = await addClient(store, 'svc', { confidential: true });
      expect(secret).toMatch(/^lk_cs_[A-Za-z0-9_-]{43}$/);
      for (const wrong of ['', 'wrong', `${secret}x`, (secret ?? '').slice(0, -1), (secret ?? '').toUpperCase()]) {
        expectInvalidClient(await rejected(authenticateClient({ store }, { clientId: 'svc', clientSecret: wrong, method: 'client_secret_post' })));
      }
    } finally {
      await store.close();
    }
  });

  it('a confidential client with the right secret, by post and by basic', async () => {
    const store = new SqliteStore({ path: ':memory:', now: 1_800_000_000 });
    try {
      const { client, secret } = await addClient(store, 'svc', { confidential: true });
      expect(await authenticateClient({ store }, { clientId: 'svc', clientSecret: secret, method: 'client_secret_post' })).toEqual(client);
      const credentials = readClientCredentials(basic('svc', secret ?? ''), {});
      expect(await authenticateClient({ store }, credentials)).toEqual(client);
    } finally {
      await store.close();
    }
  });
});

describe('requireGrantType', () => {
  const client = clientRecord({ name: 'CLI' });

  it('passes for an allowed grant type', () => {
    expect(() => requireGrantType(client, 'device_code')).not.toThrow();
    expect(() => requireGrantType(client, 'refresh_token')).not.toThrow();
  });

  it('throws unauthorized_client (400) for a grant type the client may not use', () => {
    const err = caught(() => requireGrantType(client, 'authorization_code'));
    expect(err.code).toBe('unauthorized_client');
    expect(err.status).toBe(400);
    expect(err.description).toBe('This client is not allowed to use the authorization_code grant.');
  });
});
