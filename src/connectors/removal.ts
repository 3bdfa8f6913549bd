/**
 * Removing a connector (`latchkey connectors remove`, the admin console): the connector and the
 * identities bound to it go; the users it created stay (their `sub` may be in other systems'
 * records) but can no longer sign in, so everything they hold ends too — sessions, refresh
 * tokens, and access tokens at userinfo and introspection — as `users revoke-tokens` does. Local
 * accounts linked to it keep theirs: they sign in with their password.
 */
import type { Store } from '../store/store.js';

export type ConnectorRemoval =
  | { removed: false }
  | {
      removed: true;
      /** How many of the users it created were signed out. */
      signedOut: number;
      /** The usernames of those that could not be (to sign out by hand). */
      notSignedOut: string[];
    };

export async function removeConnector(store: Store, id: string, now: number): Promise<ConnectorRemoval> {
  if (!(await store.removeConnector(id))) return { removed: false };
  // `local` is the source of administrators' accounts: a connector of that id (possible before
  // the id was reserved) made none of them.
  const created = id === 'local' ? [] : (await store.listUsers()).filter((u) => u.source === id);
  const notSignedOut: string[] = [];
  for (const user of created) {
    try {
      await store.revokeUserTokens(user.username, now);
    } catch {
      notSignedOut.push(user.username);
    }
  }
  return { removed: true, signedOut: created.length - notSignedOut.length, notSignedOut };
}
