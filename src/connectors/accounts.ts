/**
 * From an upstream identity to a local user: the identity (connector, upstream subject)
 * names one user for good, so `sub` never changes. A first sign-in creates a user — or, only when
 * the connector trusts its emails (`--trust-email`) and the upstream says this one is verified,
 * links to the one local account (made by an administrator, not by another connector) whose email
 * is verified and the same. Never by username, never by an unverified email, never to a user
 * another upstream made: each would let one upstream account take over someone else's. Each
 * sign-in refreshes what the upstream knows (the profile of users it created; the groups of every
 * user), after checking it as an administrator's input is checked (upstream_attributes.ts), and
 * the roles the person holds through those groups (roles declaring one of them, `roles add
 * --group`): gained at a sign-in with the group, lost at the next sign-in without it.
 */
import { randomUuid, randomString } from '../crypto/secrets.js';
import { rolesForGroups } from '../directory/roles.js';
import { DuplicateError, type GroupRolesChange, type Store, type UserRecord } from '../store/store.js';
import { checkedProfile, type RefusedAttribute } from './upstream_attributes.js';
import { UpstreamError, type UpstreamProfile } from './upstream_profile.js';

export interface SignInThrough {
  connectorId: string;
  /**
   * Whether this upstream's word that an email is verified is taken, so the users it creates carry
   * email_verified: OIDC connectors only with --trust-email (a multi-tenant provider lets anyone
   * assert any address); GitHub (which lists only addresses it verified) and directories (whose
   * entries administrators keep) always.
   */
  emailTrusted: boolean;
  /** Link a first sign-in to a local account by that verified email (--trust-email; oidc only). */
  linkByEmail: boolean;
}

export interface UpstreamUser {
  user: UserRecord;
  /** The first sign-in created this user. */
  created: boolean;
  /** The first sign-in linked this identity to an existing local account by its email. */
  linked: boolean;
  /** What the upstream sent that was left out, failing the checks of `users add`. */
  refused: RefusedAttribute[];
  /** The roles this sign-in gave and took through the person's upstream groups. */
  groupRoles: GroupRolesChange;
}

/** Usernames follow the rule of `users add`: 1-64 of A-Z a-z 0-9 . _ @ -. */
function usernameBase(profile: UpstreamProfile): string {
  const raw = profile.username ?? profile.email?.split('@')[0] ?? 'user';
  const cleaned = raw
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._@-]/g, '')
    .slice(0, 48);
  return cleaned === '' ? 'user' : cleaned;
}

/** Candidates in order: the upstream name, then qualified by the connector, then numbered. */
export function usernameCandidates(profile: UpstreamProfile, connectorId: string): string[] {
  const base = usernameBase(profile);
  const qualified = `${base}@${connectorId}`.slice(0, 64);
  return [
    base,
    qualified,
    ...Array.from({ length: 8 }, (_, i) => `${qualified.slice(0, 60)}-${i + 2}`),
    `${base.slice(0, 40)}-${randomString('abcdefghjkmnpqrstuvwxyz23456789', 10)}`,
  ];
}

const disabledError = (userId: string) => new UpstreamError('This account has been disabled.', 'disabled', `user ${userId} is disabled`);
const removedError = (connectorId: string) =>
  new UpstreamError(
    'Signing in this way was removed from your account. Sign in another way, or ask an administrator.',
    'not_allowed',
    `the identity was removed from its account (${connectorId})`,
  );

export async function userForUpstream(store: Store, through: SignInThrough, given: UpstreamProfile, now: number): Promise<UpstreamUser> {
  const { connectorId } = through;
  const { profile, refused } = checkedProfile(given);
  const verifiedEmail = through.emailTrusted && profile.emailVerified ? profile.email : undefined;
  const emailVerified = verifiedEmail !== undefined;
  const identity = { connectorId, subject: profile.subject, createdAt: now, lastSignInAt: now };
  let user = await existingUser(store, connectorId, profile.subject);
  // A removed identity (linked_identities.ts) is not linked again by its email, nor given a fresh account.
  if (!user && (await store.findRemovedIdentity(connectorId, profile.subject))) throw removedError(connectorId);
  let created = false;
  let linked = false;
  if (!user && verifiedEmail !== undefined && through.linkByEmail) {
    const sameEmail = (await store.findUsersByEmail(verifiedEmail)).filter((u) => u.source === 'local' && u.emailVerified);
    // Exactly one: with two people of one email, neither is the right one to hand over.
    const [target] = sameEmail;
    if (sameEmail.length === 1 && target !== undefined) {
      // A disabled account is not quietly replaced by a fresh one of the same person.
      if (target.disabled) throw disabledError(target.id);
      try {
        await store.linkIdentity({ ...identity, userId: target.id });
        linked = true;
      } catch (err) {
        if (!(err instanceof DuplicateError)) throw err;
      }
      user = await existingUser(store, connectorId, profile.subject);
    }
  }
  if (!user) {
    const made = await createUser(store, connectorId, profile, identity, emailVerified, now);
    user = made.user;
    created = made.created;
  }
  if (user.disabled) throw disabledError(user.id);
  const createdHere = user.source === connectorId;
  // An email the upstream stopped sending is kept; one it sent broken is not: the address the
  // person had may no longer be theirs, so it is no longer asserted (verified or not).
  const email = profile.email !== undefined ? { email: profile.email, emailVerified } : refused.includes('email') ? { email: '', emailVerified: false } : {};
  const stillBound = await store.recordUpstreamSignIn(connectorId, profile.subject, now, {
    groups: profile.groups,
    ...(createdHere ? { ...email, name: profile.name } : {}),
  });
  // Removed while this sign-in was on its way.
  if (!stillBound) throw removedError(connectorId);
  const groupRoles = (await store.setGroupRoles(user.id, rolesForGroups(await store.listRoles(), profile.groups), now)) || { gained: [], lost: [] };
  return { user: (await store.findUserById(user.id)) ?? user, created, linked, refused, groupRoles };
}

async function existingUser(store: Store, connectorId: string, subject: string): Promise<UserRecord | undefined> {
  const identity = await store.findIdentity(connectorId, subject);
  return identity && store.findUserById(identity.userId);
}

async function createUser(
  store: Store,
  connectorId: string,
  profile: UpstreamProfile,
  identity: { connectorId: string; subject: string; createdAt: number; lastSignInAt: number },
  emailVerified: boolean,
  now: number,
): Promise<{ user: UserRecord; created: boolean }> {
  const id = randomUuid();
  for (const username of usernameCandidates(profile, connectorId)) {
    const user: UserRecord = {
      id,
      username,
      email: profile.email ?? '',
      name: profile.name,
      // No password: such a user signs in through the connector only.
      passwordHash: 'upstream',
      disabled: false,
      createdAt: now,
      tokensRevokedAt: undefined,
      source: connectorId,
      emailVerified,
      roles: [],
      groups: profile.groups,
      profile: {},
      updatedAt: now,
    };
    try {
      await store.createUserWithIdentity(user, { ...identity, userId: id });
      return { user, created: true };
    } catch (err) {
      if (!(err instanceof DuplicateError)) throw err;
      // A first sign-in racing this one bound the identity: that user is the one.
      const raced = await existingUser(store, connectorId, profile.subject);
      if (raced) return { user: raced, created: false };
    }
  }
  throw new UpstreamError('No username could be chosen for your account. Ask an administrator.', 'error', 'every username candidate is taken');
}
