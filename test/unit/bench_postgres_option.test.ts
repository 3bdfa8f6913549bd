import { describe, expect, it } from 'vitest';
import { benchPostgresUrl } from '../../bench/postgres_option.js';

describe('benchPostgresUrl', () => {
  it('takes --postgres first, else a PostgreSQL LATCHKEY_DB; a SQLite LATCHKEY_DB or nothing means no PostgreSQL runs', () => {
    expect(benchPostgresUrl('postgres://a@h/db', 'postgresql://b@h/other')).toBe('postgres://a@h/db');
    expect(benchPostgresUrl(undefined, 'postgresql://b@h/other')).toBe('postgresql://b@h/other');
    expect(benchPostgresUrl(undefined, 'postgres://b@h:5432/db')).toBe('postgres://b@h:5432/db');
    expect(benchPostgresUrl(undefined, './data/latchkey.db')).toBeUndefined();
    expect(benchPostgresUrl(undefined, undefined)).toBeUndefined();
  });
});
