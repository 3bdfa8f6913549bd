/**
 * From an upstream identity to a local user (issue 15): the identity (connector, upstream subject)
 * names one user for good, so `sub` never changes. A first sign-in creates a user — or, only when
 * the connector trusts its emails and the upstream says this one is verified, links to the one
 * local user with that email. Never by username, never by an unverified email: either would let an
 * upstream account take over someone else's. Each sign-in refreshes what the upstream knows (the
 * profile of users it created; the groups of every user).
 */
import { randomUuid, randomString } from '../crypto/secrets.js';
import { DuplicateError, type Store, type UserRecord } from '../store/store.js';
import { UpstreamError, type UpstreamProfile } from './upstream_profile.js';

export interface SignInThrough {
  connectorId: string;
  /** Link by a verified email to an existing user (`--trust-email`; oidc only). */
  trustEmail: boolean;
}

/** Usernames follow the rule of `users add`: 1-64 of A-Z a-z 0-9 . _ @ -. */
function usernameBase(profile: UpstreamProfile): string {
  const raw = profile.username ?? profile.email?.split('@')[0] ?? 'user';
  const cleaned = raw.normalize('NFKD').replace(/[^A-Za-z0-9._@-]/g, '').slice(0, 48);
  return cleaned === '' ? 'user' : cleaned;
}

/** Candidates in order: the upstream name, then qualified by the connector, then numbered. */
export function usernameCandidates(profile: UpstreamProfile, connectorId: string): string[] {
  const base = usernameBase(profile);
  const qualified = `${base}@${connectorId}`.slice(0, 64);
  return [base, qualified, ...Array.from({ length: 8 }, (_, i) => `${qualified.slice(0, 60)}-${i + 2}`), `${base.slice(0, 40)}-${randomString('abcdefghjkmnpqrstuvwxyz23456789', 10)}`];
}

export async function userForUpstream(store: Store, through: SignInThrough, profile: UpstreamProfile, now: number): Promise<UserRecord> {
  const { connectorId } = through;
  const identity = { connectorId, subject: profile.subject, createdAt: now, lastSignInAt: now };
  let user = await existingUser(store, connectorId, profile.subject);
  if (!user && through.trustEmail && profile.emailVerified && profile.email !== undefined) {
    const sameEmail = (await store.findUsersByEmail(profile.email)).filter((u) => u.emailVerified);
    // Exactly one: with two people of one email, neither is the right one to hand over.
    if (sameEmail.length === 1) {
      try {
        await store.linkIdentity({ ...identity, userId: sameEmail[0]!.id });
      } catch (err) {
        if (!(err instanceof DuplicateError)) throw err;
      }
      user = await existingUser(store, connectorId, profile.subject);
    }
  }
  if (!user) user = await createUser(store, connectorId, profile, identity, now);
  if (user.disabled) throw new UpstreamError('This account has been disabled.', 'disabled', `user ${user.id} is disabled`);
  const createdHere = user.source === connectorId;
  await store.recordUpstreamSignIn(connectorId, profile.subject, now, {
    groups: profile.groups,
    ...(createdHere
      ? { ...(profile.email === undefined ? {} : { email: profile.email, emailVerified: profile.emailVerified }), name: profile.name }
      : {}),
  });
  return (await store.findUserById(user.id)) ?? user;
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
  now: number,
): Promise<UserRecord> {
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
      emailVerified: profile.email !== undefined && profile.emailVerified,
      groups: profile.groups,
    };
    try {
      await store.createUserWithIdentity(user, { ...identity, userId: id });
      return user;
    } catch (err) {
      if (!(err instanceof DuplicateError)) throw err;
      // A first sign-in racing this one bound the identity: that user is the one.
      const raced = await existingUser(store, connectorId, profile.subject);
      if (raced) return raced;
    }
  }
  throw new UpstreamError('No username could be chosen for your account. Ask an administrator.', 'error', 'every username candidate is taken');
}
