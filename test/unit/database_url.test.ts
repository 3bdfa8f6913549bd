/**
 * LATCHKEY_DB as a postgres:// URL: accepted only when it parses, and its password never shown —
 * not in the banner, not in the configuration error when the database cannot be reached.
 */
import { describe, expect, it } from 'vitest';
import { banner } from '../../src/banner.js';
import { ConfigError, configFrom, loadConfig } from '../../src/config.js';
import { hidePassword, isPostgresUrl, redactDatabase } from '../../src/store/database_url.js';
import { openConfiguredStore } from '../../src/store/open.js';

describe('isPostgresUrl', () => {
  it.each([
    ['postgres://u@db/latchkey', true],
    ['postgresql://u@db/latchkey', true],
    ['POSTGRES://u@db/latchkey', true],
    ['./data/latchkey.db', false],
    ['/var/lib/postgres/latchkey.db', false],
    ['postgres.db', false],
  ])('%s → %s', (value, expected) => {
    expect(isPostgresUrl(value)).toBe(expected);
  });
});

describe('redactDatabase', () => {
  it('hides the password of a URL and keeps the rest', () => {
    expect(redactDatabase('postgres://latchkey:s3cret@db.internal:5432/latchkey')).toBe('postgres://latchkey:***@db.internal:5432/latchkey');
  });

  it('hides a password given as a query parameter', () => {
    expect(redactDatabase('postgresql://latchkey@db/latchkey?password=s3cret&sslmode=require')).toBe(
      'postgresql://latchkey@db/latchkey?password=***&sslmode=require',
    );
  });

  it('leaves a URL without a password and a SQLite path as they are', () => {
    expect(redactDatabase('postgres://latchkey@db/latchkey')).toBe('postgres://latchkey@db/latchkey');
    expect(redactDatabase('./data/latchkey.db')).toBe('./data/latchkey.db');
  });
});

describe('hidePassword', () => {
  it('replaces the password, raw and percent-decoded, wherever it appears', () => {
    const url = 'postgres://u:p%40ss@db/x';
    expect(hidePassword('failed for p@ss and p%40ss', url)).toBe('failed for *** and ***');
    expect(hidePassword('nothing secret here', url)).toBe('nothing secret here');
  });
});

describe('LATCHKEY_DB in the configuration', () => {
  /** Any valid key: a postgres:// database needs LATCHKEY_SECRET_KEY. */
  const secretKey = 'k'.repeat(43);

  it('accepts a postgres:// URL as is', () => {
    expect(loadConfig({ LATCHKEY_DB: 'postgres://latchkey:s3cret@db:5432/latchkey', LATCHKEY_SECRET_KEY: secretKey }).databasePath).toBe(
      'postgres://latchkey:s3cret@db:5432/latchkey',
    );
  });

  it('refuses a URL that does not parse, without repeating it (it may hold a password)', () => {
    try {
      loadConfig({ LATCHKEY_DB: 'postgres://latchkey:s3cret@db:notaport/latchkey' });
      expect.fail('loadConfig accepted an unparseable URL');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems).toEqual([expect.stringMatching(/^LATCHKEY_DB is not a valid postgres:\/\/ URL/)]);
      expect((err as ConfigError).message).not.toContain('s3cret');
    }
  });

  it('the banner shows the database without its password', () => {
    const config = configFrom({ LATCHKEY_DB: 'postgres://latchkey:s3cret@db:5432/latchkey', LATCHKEY_SECRET_KEY: secretKey });
    const text = banner(config, 3000, { createdUser: undefined, pendingPassword: undefined });
    expect(text).toContain('database postgres://latchkey:***@db:5432/latchkey');
    expect(text).not.toContain('s3cret');
  });

  it('a database that cannot be reached is a ConfigError naming LATCHKEY_DB, without the password', async () => {
    // Port 1 on the loopback address: nothing listens, so the connection is refused at once.
    const config = configFrom({ LATCHKEY_DB: 'postgres://latchkey:s3cret@127.0.0.1:1/latchkey', LATCHKEY_SECRET_KEY: secretKey });
    const opened = openConfiguredStore(config);
    await expect(opened).rejects.toBeInstanceOf(ConfigError);
    const err = (await opened.catch((e: unknown) => e)) as ConfigError;
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^LATCHKEY_DB: cannot open the database postgres:\/\/latchkey:\*\*\*@127\.0\.0\.1:1\/latchkey: /);
    expect(err.message).not.toContain('s3cret');
  });
});
