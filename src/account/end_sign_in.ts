/**
 * Ending one live sign-in by the id `sessions list` shows, as `latchkey sessions revoke`, the
 * console's Sessions page and `DELETE /api/v1/sessions/{id}` do it: a browser session (signed out
 * at its next request) or else a refresh-token family (its next refresh is invalid_grant; its
 * access tokens are refused at userinfo and introspection, RFC 7009 §2.1).
 */
import type { RefreshFamilySummary, SessionRecord, Store } from '../store/store.js';

export type EndedSignIn = { kind: 'browser'; session: SessionRecord } | { kind: 'app'; family: RefreshFamilySummary };

/** The sign-in ended, or undefined when no live one has this id. `now` is the revocation time. */
export async function endSignIn(store: Store, id: string, now: number): Promise<EndedSignIn | undefined> {
  const session = await store.endSessionById(id, undefined);
  if (session) return { kind: 'browser', session };
  const family = await store.revokeRefreshFamilyOf(id, undefined, now);
  return family ? { kind: 'app', family } : undefined;
}
