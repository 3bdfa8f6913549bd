import { hasControlCharacters } from '../directory/validation.js';

/** What a connector learns about the person from the upstream, in one shape for every kind. */
export interface UpstreamProfile {
  /** The upstream's stable id of the person: never an email or a name, which can change hands. */
  subject: string;
  /** A preferred username (for a new local user's username and `preferred_username`). */
  username: string | undefined;
  email: string | undefined;
  emailVerified: boolean;
  name: string | undefined;
  groups: string[];
  /**
   * When the person last signed in at the upstream (OIDC `auth_time`), if it says: the session
   * here carries it, so a client's max_age measures the real sign-in, not the return from an
   * upstream session opened long ago.
   */
  authTime?: number | undefined;
}

/** Why an upstream sign-in failed, in words a person can act on (never the upstream's raw text). */
export class UpstreamError extends Error {
  constructor(
    /** Shown on the page. */
    readonly publicMessage: string,
    /** For the log and the metrics' outcome label. */
    readonly reason: 'denied' | 'error' | 'state' | 'invalid_response' | 'unreachable' | 'misconfigured' | 'not_allowed' | 'disabled',
    readonly detail = '',
  ) {
    super(`${reason}: ${detail || publicMessage}`);
    this.name = 'UpstreamError';
  }
}

/**
 * What people see when a connector is set up wrong (a wrong issuer, client secret or bind
 * password): only an administrator can fix it, so trying again is not suggested. Pages add a
 * reference that the log line carries.
 */
export const misconfiguredMessage = 'This sign-in method is not set up correctly; tell your administrator.';
export const misconfiguredMessageWithReference = 'This sign-in method is not set up correctly; tell your administrator (reference {reference}).';

/** Groups from a claim or an API answer: strings only, trimmed, de-duplicated, bounded. */
export function cleanGroups(value: unknown): string[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  const groups = list
    .filter((g): g is string => typeof g === 'string')
    .map((g) => g.trim())
    .filter((g) => g !== '' && g.length <= 256 && !hasControlCharacters(g));
  return [...new Set(groups)].slice(0, 200);
}
