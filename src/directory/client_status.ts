/**
 * Disabling and enabling a client (`clients disable/enable`, `PATCH /api/v1/clients/{id}` with
 * `disabled`). A disabled client cannot sign anyone in or get tokens, and the tokens it holds stop
 * working at once, since the token endpoint and every token lookup check the flag.
 */
import type { ClientRecord, Store } from '../store/store.js';
import { refuseManaged } from './managed.js';

/** Why the client's status cannot change: the built-in client stays usable, since it signs the admin commands in. */
export class BuiltInClientError extends Error {
  constructor(clientId: string) {
    super(`${clientId} is built in and cannot be disabled`);
    this.name = 'BuiltInClientError';
  }
}

/** The refusals, before anything changes: the built-in client cannot be disabled, a managed one is left to its file. */
export function checkClientStatusChange(clientId: string, client: ClientRecord | undefined, disabled: boolean): void {
  if (disabled && client?.builtIn) throw new BuiltInClientError(clientId);
  refuseManaged('client', clientId, client);
}

/** Sets the flag; false when there is no such client. */
export async function setClientDisabled(store: Store, clientId: string, disabled: boolean): Promise<boolean> {
  checkClientStatusChange(clientId, await store.findClient(clientId), disabled);
  return store.setClientDisabled(clientId, disabled);
}
