import { describe, expect, it } from 'vitest';
import { isBrokenConnection, isPostgresFault, isStoreUnavailable, StoreUnavailableError, unavailableReason } from '../../src/store/unavailable.js';
import { toOAuthError } from '../../src/app.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isPostgresFault: what node-postgres raises when the database is away, slow or locked', () => {
  it.each([
    ['57P01 admin_shutdown (a restart, a terminated backend)', coded('57P01'), 'connection', true],
    ['57P03 cannot_connect_now (starting up)', coded('57P03'), 'connection', false],
    ['57014 query_canceled (statement_timeout)', coded('57014'), 'timeout', false],
    ['55P03 lock_not_available (lock_timeout)', coded('55P03'), 'timeout', false],
    ['25006 read_only_sql_transaction (a failover left us on a standby)', coded('25006'), 'connection', false],
    ['08006 connection_failure', coded('08006'), 'connection', true],
    ['53300 too_many_connections', coded('53300'), 'connection', false],
    ['40P01 a deadlock victim, after its retries', coded('40P01'), 'connection', false],
    ['ECONNREFUSED (nothing listens)', coded('ECONNREFUSED'), 'connection', true],
    ['ECONNRESET', coded('ECONNRESET'), 'connection', true],
    ['Connection terminated unexpectedly', new Error('Connection terminated unexpectedly'), 'connection', true],
    ['a wait for a pooled connection that timed out', new Error('timeout exceeded when trying to connect'), 'timeout', true],
    ['Query read timeout (the network stopped answering)', new Error('Query read timeout'), 'timeout', true],
  ])('%s', (_name, err, reason, broken) => {
    expect(isPostgresFault(err)).toBe(true);
    expect(unavailableReason(err)).toBe(reason);
    // A broken connection cannot take a ROLLBACK; a refused statement can.
    expect(isBrokenConnection(err)).toBe(broken);
    // The store wraps them: raw, they are not what the rest of the server sees.
    expect(isStoreUnavailable(err)).toBe(false);
  });

  it.each([
    ['23505 unique_violation (a refused write, not an outage)', coded('23505')],
    ['42P01 undefined_table (a bug)', coded('42P01')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['not an Error', 'Connection terminated'],
  ])('not %s', (_name, err) => {
    expect(isPostgresFault(err)).toBe(false);
  });
});

describe('isStoreUnavailable: a store fault as the server sees it', () => {
  it.each([
    ["the PostgreSQL store's StoreUnavailableError", new StoreUnavailableError('x', 'timeout')],
    ['SQLITE_BUSY (another process holds the write lock)', coded('SQLITE_BUSY')],
    ['SQLITE_FULL (the disk is full)', coded('SQLITE_FULL')],
    ['SQLITE_IOERR_WRITE', coded('SQLITE_IOERR_WRITE')],
    ['SQLITE_READONLY_DBMOVED', coded('SQLITE_READONLY_DBMOVED')],
  ])('%s', (_name, err) => {
    expect(isStoreUnavailable(err)).toBe(true);
  });

  it.each([
    ['SQLITE_CONSTRAINT_UNIQUE', coded('SQLITE_CONSTRAINT_UNIQUE')],
    ['a socket error from an upstream or the mail server (not the database)', coded('ECONNREFUSED')],
    ['a TypeError', new TypeError('x')],
  ])('not %s', (_name, err) => {
    expect(isStoreUnavailable(err)).toBe(false);
  });
});

describe('toOAuthError of a database outage', () => {
  it('is 503 temporarily_unavailable with Retry-After, and says nothing of the database to the client', () => {
    const error = toOAuthError(new StoreUnavailableError('the database is unreachable: connect ECONNREFUSED 10.0.0.5:5432', 'connection'));
    expect(error.status).toBe(503);
    expect(error.headers).toEqual({ 'retry-after': '2' });
    expect(error.toJSON()).toEqual({ error: 'temporarily_unavailable', error_description: 'The service is briefly unavailable. Try again in a moment.' });
    expect(error.detail).toContain('ECONNREFUSED');
  });

  it("a bug is still a 500 server_error, and so is a socket error that is not the database's", () => {
    expect(toOAuthError(new TypeError('x')).status).toBe(500);
    expect(toOAuthError(coded('ECONNREFUSED')).status).toBe(500);
  });
});
