/**
 * An operator removing the identities a person has at one connector (`users unlink`, DELETE
 * /api/v1/users/{username}/identities/{connector}): that upstream account can no longer sign in
 * here, and every sign-in of the person ends (store.unlinkIdentity). No guard: an operator may take
 * the last way in (to give a password after, or to keep them out); the outcome says whether one is left.
 */
import type { Store, UserIdentityRecord, UserRecord } from '../store/store.js';
import { hasUsablePassword } from './linked_identities.js';

export type UnlinkOutcome =
  | { ok: true; removed: UserIdentityRecord[]; canSignIn: boolean }
  /** Nothing was linked there: `refusal` says why, as the command prints it. */
  | { ok: false; refusal: string };

/** `now`: the revocation time (the later of both clocks). */
export async function unlinkConnector(store: Store, user: UserRecord, connectorId: string, now: number): Promise<UnlinkOutcome> {
  const removed = await store.unlinkIdentity(user.id, connectorId, now);
  if (removed === 'last_way_in' || removed.length === 0) {
    if (!(await store.findConnector(connectorId))) return { ok: false, refusal: `no connector "${connectorId}"` };
    const linked = [...new Set((await store.listIdentities(user.id)).map((i) => i.connectorId))];
    return { ok: false, refusal: `${user.username} has no identity linked at "${connectorId}"${linked.length > 0 ? ` (linked: ${linked.join(', ')})` : ''}` };
  }
  const [remaining, passkeys] = await Promise.all([store.listIdentities(user.id), store.listPasskeys(user.id)]);
  return { ok: true, removed, canSignIn: hasUsablePassword(user) || remaining.length > 0 || passkeys.length > 0 };
}
