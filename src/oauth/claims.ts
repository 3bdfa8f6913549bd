/**
 * User claims released by scope (OIDC Core §5.4): `email` gives email and email_verified,
 * `profile` gives name and preferred_username. Emails are registered by an administrator, so
 * they count as verified.
 */
import type { UserRecord } from '../store/store.js';

export interface UserClaims {
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
}

export function claimsForScope(user: UserRecord, scope: string): UserClaims {
  const scopes = scope.split(' ');
  const claims: UserClaims = {};
  if (scopes.includes('email')) {
    claims.email = user.email;
    claims.email_verified = true;
  }
  if (scopes.includes('profile')) {
    claims.name = user.name ?? user.username;
    claims.preferred_username = user.username;
  }
  return claims;
}
