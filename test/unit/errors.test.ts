/** OAuthError: an answer, not a fault. */
import { describe, expect, it } from 'vitest';
import { OAuthError } from '../../src/errors.js';

describe('OAuthError', () => {
  it("carries no stack trace (authorization_pending is most polls' answer), and leaves Error.stackTraceLimit as it was", () => {
    const before = Error.stackTraceLimit;
    const error = new OAuthError('authorization_pending', 'The user has not yet approved the request.');
    expect(error.stack).toBe('OAuthError: authorization_pending: The user has not yet approved the request.');
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('a fault').stack).toContain('errors.test.ts');
  });

  it('is still an Error, with its code, status and public body', () => {
    const error = new OAuthError('invalid_client', 'Client authentication failed.');
    expect(error).toBeInstanceOf(Error);
    expect(error.status).toBe(401);
    expect(error.toJSON()).toEqual({ error: 'invalid_client', error_description: 'Client authentication failed.' });
  });
});
