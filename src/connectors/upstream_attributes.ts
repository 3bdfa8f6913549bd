/**
 * What an upstream says of a person is checked as an administrator's `users add` input is
 * (directory/validation.ts) before any of it is stored or handed on: a directory's displayName with
 * terminal escapes, or a mail attribute with CR LF in it, would otherwise reach /userinfo, id_tokens
 * (as a verified email), `latchkey users list` and `whoami` as it came. A value that fails is left
 * out, never cleaned into something else: a name or username is dropped (the username then comes
 * from the email, as when the upstream sends none), an email is dropped with its verification (the
 * user then has no email, never an unverified copy of a broken one), a group is dropped. A subject
 * that fails refuses the sign-in: it names the identity for good and cannot be left out.
 */
import { AdminInputError, hasControlCharacters, validEmail, validName } from '../directory/validation.js';
import { UpstreamError, type UpstreamProfile } from './upstream_profile.js';

export type RefusedAttribute = 'name' | 'email' | 'username' | 'groups';

export interface CheckedProfile {
  profile: UpstreamProfile;
  /** What was left out (for the audit log: an operator may want to fix it upstream). */
  refused: RefusedAttribute[];
}

/** The value when the rule accepts it, else undefined. */
function accepted<T>(rule: () => T): T | undefined {
  try {
    return rule();
  } catch (err) {
    if (err instanceof AdminInputError) return undefined;
    throw err;
  }
}

export function checkedProfile(given: UpstreamProfile): CheckedProfile {
  // OIDC Core §2: sub is at most 255 ASCII characters; a directory's entryUUID or DN is printable.
  if (given.subject === '' || hasControlCharacters(given.subject)) {
    throw new UpstreamError('The sign-in service did not say who you are.', 'invalid_response', 'the subject is empty or holds control characters');
  }
  const refused: RefusedAttribute[] = [];
  const email = given.email === undefined ? undefined : accepted(() => validEmail(given.email));
  if (given.email !== undefined && email === undefined) refused.push('email');
  const name = given.name === undefined ? undefined : accepted(() => validName(given.name));
  if (given.name !== undefined && name === undefined && given.name.trim() !== '') refused.push('name');
  // The username is only the start of a new user's username (accounts.ts keeps to the characters
  // `users add` allows); one with control characters says nothing worth keeping.
  const username = given.username !== undefined && hasControlCharacters(given.username) ? undefined : given.username;
  if (given.username !== undefined && username === undefined) refused.push('username');
  const groups = given.groups.filter((g) => !hasControlCharacters(g));
  if (groups.length !== given.groups.length) refused.push('groups');
  return {
    profile: { ...given, email, emailVerified: given.emailVerified && email !== undefined, name, username, groups },
    refused,
  };
}
