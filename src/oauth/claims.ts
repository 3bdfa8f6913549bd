/**
 * A person's claims and which of them each answer releases (OIDC Core §5.1, §5.3, §5.4, §5.5).
 *
 * Scopes release groups of claims: `profile` the fourteen profile claims, `email` email and
 * email_verified (an administrator's entry counts as verified; an upstream says for its users),
 * `address` the postal address, `phone` phone_number and phone_number_verified. The `claims`
 * request parameter asks for individual claims, for the userinfo answer or the id_token.
 *
 * Userinfo answers with the scopes' claims and the claims asked for it by name. Where an access
 * token is issued, OIDC Core §5.4 puts the scopes' claims at userinfo, not in the id_token; the
 * contract keeps email/email_verified and name/preferred_username in id_tokens for the email and
 * profile scopes (`LATCHKEY_ID_TOKEN_SCOPE_CLAIMS=basic`, the default), and `none` leaves them
 * out. Claims asked for the id_token by name are always in it. A claim the person has no value
 * for is left out (never null, never an empty string).
 */
import type { PostalAddress, RequestedClaims, UserProfileClaims, UserRecord } from '../store/store.js';

export interface UserClaims extends UserProfileClaims {
  name?: string;
  preferred_username?: string;
  email?: string;
  email_verified?: boolean;
  updated_at?: number;
}

export type ClaimName = keyof UserClaims;

export const profileScopeClaims: readonly ClaimName[] = [
  'name',
  'family_name',
  'given_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'updated_at',
];

/** OIDC Core §5.4: the claims each scope asks for. */
export const scopeClaims: Readonly<Record<string, readonly ClaimName[]>> = {
  profile: profileScopeClaims,
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
};

/** Every claim about the person this server holds, and so every name the `claims` parameter may ask for. */
export const personClaims: readonly ClaimName[] = Object.values(scopeClaims).flat();

const personClaimSet: ReadonlySet<string> = new Set(personClaims);

export function isPersonClaim(name: string): name is ClaimName {
  return personClaimSet.has(name);
}

/** What the contract has always put in id_tokens for the email and profile scopes. */
const basicIdTokenScopeClaims: Readonly<Record<string, readonly ClaimName[]>> = {
  email: ['email', 'email_verified'],
  profile: ['name', 'preferred_username'],
};

export type IdTokenScopeClaims = 'basic' | 'none';

/** The scope a claim belongs to: asking for the claim by name needs the person's consent to that scope. */
export function scopeOfClaim(name: string): string | undefined {
  for (const [scope, claims] of Object.entries(scopeClaims)) if ((claims as readonly string[]).includes(name)) return scope;
  return undefined;
}

/** The scopes whose consent covers the claims a request names (they are shown and remembered as such). */
export function claimScopes(requested: RequestedClaims | undefined): string[] {
  if (!requested) return [];
  const scopes = new Set<string>();
  for (const name of [...requested.userinfo, ...requested.idToken]) {
    const scope = scopeOfClaim(name);
    if (scope !== undefined) scopes.add(scope);
  }
  return [...scopes];
}

function presentAddress(address: PostalAddress | undefined): PostalAddress | undefined {
  if (!address) return undefined;
  const members = Object.entries(address).filter(([, v]) => typeof v === 'string' && v !== '');
  return members.length === 0 ? undefined : Object.fromEntries(members);
}

/** The value of one claim for this person, or undefined when there is none to give. */
function claimValue(user: UserRecord, name: ClaimName): UserClaims[ClaimName] {
  switch (name) {
    // The contract's `name` falls back to the username, so a profile always names the person.
    case 'name':
      return user.name ?? user.username;
    case 'preferred_username':
      return user.username;
    case 'email':
      return user.email === '' ? undefined : user.email;
    case 'email_verified':
      return user.email === '' ? undefined : user.emailVerified;
    case 'updated_at':
      return user.updatedAt;
    case 'address':
      return presentAddress(user.profile.address);
    case 'phone_number_verified':
      // Said only of a number the person has.
      return user.profile.phone_number === undefined ? undefined : user.profile.phone_number_verified === true;
    default: {
      const value = user.profile[name];
      return typeof value === 'string' && value !== '' ? value : undefined;
    }
  }
}

/** The named claims the person has values for, in the order named. */
export function claimsOf(user: UserRecord, names: Iterable<string>): UserClaims {
  const claims: Record<string, unknown> = {};
  for (const name of names) {
    if (!isPersonClaim(name) || name in claims) continue;
    const value = claimValue(user, name);
    if (value !== undefined) claims[name] = value;
  }
  return claims;
}

function namesForScopes(scope: string, table: Readonly<Record<string, readonly ClaimName[]>>): ClaimName[] {
  return scope
    .split(' ')
    .filter((s) => s !== '')
    .flatMap((s) => table[s] ?? []);
}

/** Every claim a scope string releases (OIDC Core §5.4). */
export function claimsForScope(user: UserRecord, scope: string): UserClaims {
  return claimsOf(user, namesForScopes(scope, scopeClaims));
}

/** The userinfo answer's claims: the scopes' and those asked for userinfo by name. */
export function userinfoClaims(user: UserRecord, scope: string, requestedUserinfo: readonly string[] = []): UserClaims {
  return claimsOf(user, [...namesForScopes(scope, scopeClaims), ...requestedUserinfo]);
}

/** The id_token's claims about the person: the contract's scope claims (unless turned off) and those asked for it by name. */
export function idTokenClaims(user: UserRecord, scope: string, requested: RequestedClaims | undefined, mode: IdTokenScopeClaims): UserClaims {
  const fromScopes = mode === 'basic' ? namesForScopes(scope, basicIdTokenScopeClaims) : [];
  return claimsOf(user, [...fromScopes, ...(requested?.idToken ?? [])]);
}
