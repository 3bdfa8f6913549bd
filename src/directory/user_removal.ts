/**
 * Removing a person (DELETE /api/v1/users/{username}): everything they hold ends first, as
 * `users revoke-tokens` ends it (RFC 6819 §5.2.2.3), then the record goes with their sessions,
 * refresh tokens, upstream identities, second factors and role grants (store.removeUser, one step).
 * The sessions that ended are answered so the caller can tell their clients (back-channel logout).
 */
import type { SessionRecord, Store, UserRecord } from '../store/store.js';

export interface RemovedPerson {
  user: UserRecord;
  /** Their browser sessions alive until now, whose clients are to be told. */
  endedSessions: SessionRecord[];
}

/** Undefined when there is no such person; `now` is the revocation time (the later of both clocks). */
export async function removePerson(store: Store, username: string, now: number): Promise<RemovedPerson | undefined> {
  const found = await store.findUserByUsername(username);
  if (!found) return undefined;
  const endedSessions = await store.listSessions(found.id, now);
  const user = await store.removeUser(found.username, now);
  return user === undefined ? undefined : { user, endedSessions };
}
