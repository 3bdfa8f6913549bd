import { describe, expect, it } from 'vitest';
import { isStoreUnavailable, StoreUnavailableError, unavailableReason } from '../../src/store/unavailable.js';
import { toOAuthError } from '../../src/app.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isStoreUnavailable: a database that is away, slow or locked', () => {
  it.each([
    ['57P01 admin_shutdown (a restart, a terminated backend)', coded('57P01'), 'connection'],
    ['57P03 cannot_connect_now (starting up)', coded('57P03'), 'connection'],
    ['57014 query_canceled (statement_timeout)', coded('57014'), 'timeout'],
    ['55P03 lock_not_available (lock_timeout)', coded('55P03'), 'timeout'],
    ['08006 connection_failure', coded('08006'), 'connection'],
    ['53300 too_many_connections', coded('53300'), 'connection'],
    ['40P01 a deadlock victim, after its retries', coded('40P01'), 'connection'],
    ['ECONNREFUSED (nothing listens)', coded('ECONNREFUSED'), 'connection'],
    ['ECONNRESET', coded('ECONNRESET'), 'connection'],
    ['pg: Connection terminated unexpectedly', new Error('Connection terminated unexpectedly'), 'connection'],
    ['pg-pool: a wait for a connection that timed out', new Error('timeout exceeded when trying to connect'), 'timeout'],
    ['pg: Query read timeout', new Error('Query read timeout'), 'timeout'],
    ['SQLITE_BUSY (another process holds the write lock)', coded('SQLITE_BUSY'), 'connection'],
    ['SQLITE_FULL (the disk is full)', coded('SQLITE_FULL'), 'connection'],
    ['SQLITE_IOERR_WRITE', coded('SQLITE_IOERR_WRITE'), 'connection'],
    ['our own StoreUnavailableError', new StoreUnavailableError('x', 'timeout'), 'timeout'],
  ])('%s', (_name, err, reason) => {
    expect(isStoreUnavailable(err)).toBe(true);
    expect(unavailableReason(err)).toBe(reason);
  });

  it.each([
    ['23505 unique_violation (a refused write, not an outage)', coded('23505')],
    ['42P01 undefined_table (a bug)', coded('42P01')],
    ['SQLITE_CONSTRAINT_UNIQUE', coded('SQLITE_CONSTRAINT_UNIQUE')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['not an Error', 'Connection terminated'],
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

  it('a bug is still a 500 server_error', () => {
    expect(toOAuthError(new TypeError('x')).status).toBe(500);
  });
});
