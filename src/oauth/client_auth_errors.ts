/** The one answer to every failed client authentication (RFC 6749 §5.2), whatever the method. */
import { OAuthError } from '../errors.js';

const basicChallenge = { 'www-authenticate': 'Basic realm="latchkey", charset="UTF-8"' };

/** RFC 6749 §5.2 requires the challenge when Basic was tried; it is sent always, as a hint. */
export function invalidClient(detail: string): OAuthError {
  return new OAuthError('invalid_client', 'Client authentication failed.', { detail, headers: basicChallenge });
}
