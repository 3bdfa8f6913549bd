import { isConfidential } from '../../oauth/client_type.js';
/**
 * `--introspection-client` of `apis add` and `apis update`: the confidential clients (the API's own
 * servers) that may introspect tokens issued for the API (RFC 7662 §4). Each must exist and have a
 * secret, since only confidential clients can introspect at all.
 */
import { validClientId } from '../../directory/validation.js';
import type { Store } from '../../store/store.js';
import { CommandError } from '../command.js';

/** The client ids as typed, checked for form only (the server checks the rest when remote). */
export function introspectionClientIds(values: string[] | undefined): string[] {
  return [...new Set((values ?? []).map(validClientId))];
}

export async function validIntrospectionClients(store: Store, values: string[] | undefined): Promise<string[]> {
  const ids = introspectionClientIds(values);
  for (const id of ids) {
    const client = await store.findClient(id);
    if (!client) throw new CommandError(`no client "${id}" (register it first: latchkey clients add ${id} --confidential)`);
    if (!isConfidential(client)) throw new CommandError(`client "${id}" is public; only confidential clients can introspect tokens`);
  }
  return ids;
}
