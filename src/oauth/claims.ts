/**
 * User claims released by scope (OIDC Core §5.4): `email` gives email and email_verified (an
 * administrator's entry counts as verified; an upstream says for its users), `profile` gives name
 * and preferred_username. A user with no email (an upstream that shared none) gets no email claim.
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
  if (scopes.includes('email') && user.email !== '') {
    claims.email = user.email;
    claims.email_verified = user.emailVerified;
  }
  if (scopes.includes('profile')) {
    claims.name = user.name ?? user.username;
    claims.preferred_username = user.username;
  }
  return claims;
}
