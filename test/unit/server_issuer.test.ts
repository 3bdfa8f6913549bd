/** Which issuer the admin commands print addresses on: LATCHKEY_ISSUER when set, else the one the server recorded. */
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../src/clock.js';
import { configFrom } from '../../src/config.js';
import { recordServerIssuer, serverIssuer } from '../../src/server_issuer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite_store.js';

let store: SqliteStore;
afterEach(async () => store.close());

describe('serverIssuer', () => {
  it('without LATCHKEY_ISSUER: the issuer the server recorded at its start, without a note', async () => {
    store = new SqliteStore({ path: ':memory:' });
    await recordServerIssuer(store, configFrom({ LATCHKEY_ISSUER: 'http://localhost:41873' }), manualClock());
    expect(await serverIssuer(store, configFrom({}))).toEqual({ issuer: 'http://localhost:41873', note: undefined });
  });

  it('LATCHKEY_ISSUER wins, and a difference from the recorded one is said', async () => {
    store = new SqliteStore({ path: ':memory:' });
    await recordServerIssuer(store, configFrom({ LATCHKEY_ISSUER: 'https://id.example.com' }), manualClock());
    expect(await serverIssuer(store, configFrom({ LATCHKEY_ISSUER: 'https://id.example.com/' }))).toEqual({
      issuer: 'https://id.example.com',
      note: undefined,
    });
    expect(await serverIssuer(store, configFrom({ LATCHKEY_ISSUER: 'https://login.example.com' }))).toEqual({
      issuer: 'https://login.example.com',
      note: 'LATCHKEY_ISSUER is https://login.example.com, but the server last started with issuer https://id.example.com: the address below is on LATCHKEY_ISSUER',
    });
  });

  it('before any start and without LATCHKEY_ISSUER: the default, with a note saying it is assumed', async () => {
    store = new SqliteStore({ path: ':memory:' });
    const found = await serverIssuer(store, configFrom({}));
    expect(found.issuer).toBe('http://localhost:3000');
    expect(found.note).toContain('the server has not started on this database yet and LATCHKEY_ISSUER is unset');
  });
});
