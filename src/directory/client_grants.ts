/**
 * What a machine client may ask client_credentials tokens for, per API (`clients grant` and the
 * management API's /clients/{client_id}/grants): the client and the API exist, the API declares
 * every scope granted, and a client a configuration file manages is left to that file.
 */
import type { ClientGrantRecord, Store } from '../store/store.js';
import { refuseManaged } from './managed.js';

/** Why a grant cannot be given or taken away; `undeclared` lists the scopes the API does not declare. */
export class GrantRefusal extends Error {
  constructor(
    readonly reason: 'no-client' | 'no-api' | 'no-grant' | 'undeclared',
    message: string,
    readonly undeclared: readonly string[] = [],
  ) {
    super(message);
    this.name = 'GrantRefusal';
  }
}

/**
 * Grants `scopes` (valid scope names, without repeats) of `identifier` to the client, replacing
 * what it was granted for that API. Returns the grant as saved and whether it is new.
 */
export async function grantClientScopes(
  store: Store,
  clientId: string,
  identifier: string,
  scopes: readonly string[],
  now: number,
): Promise<{ grant: ClientGrantRecord; created: boolean; grantTypes: readonly string[] }> {
  const client = await store.findClient(clientId);
  refuseManaged('client', clientId, client);
  if (!client) throw new GrantRefusal('no-client', `no client "${clientId}"`);
  const api = await store.findApi(identifier);
  if (!api) throw new GrantRefusal('no-api', `no API "${identifier}"`);
  const undeclared = scopes.filter((s) => !api.scopes.includes(s));
  if (undeclared.length > 0)
    throw new GrantRefusal(
      'undeclared',
      `API ${api.identifier} declares no scope ${undeclared.join(', ')}${api.scopes.length === 0 ? ' (it declares none: apis update --scope)' : ` (it declares: ${api.scopes.join(', ')})`}`,
      undeclared,
    );
  const before = await store.findClientGrant(clientId, api.identifier);
  const grant = { clientId, api: api.identifier, scopes: [...scopes], createdAt: before?.createdAt ?? now };
  await store.saveClientGrant(grant);
  return { grant, created: before === undefined, grantTypes: client.grantTypes };
}

/** Takes the client's grant for `identifier` away; tokens already issued stay valid until they expire. */
export async function removeClientGrant(store: Store, clientId: string, identifier: string): Promise<void> {
  refuseManaged('client', clientId, await store.findClient(clientId));
  if (!(await store.removeClientGrant(clientId, identifier))) throw new GrantRefusal('no-grant', `client "${clientId}" has no grant for ${identifier}`);
}
