/** The objects a configuration file may declare, read from the store: what plan and export compare and print. */
import type { Store } from '../store/store.js';
import type { DatabaseSnapshot } from './plan.js';

export async function readDatabaseSnapshot(store: Store): Promise<DatabaseSnapshot> {
  const [apis, roles, clients, grants, connectors] = await Promise.all([
    store.listApis(),
    store.listRoles(),
    store.listClients(),
    store.listClientGrants(undefined),
    store.listConnectors(),
  ]);
  return { apis, roles, clients, grants, connectors };
}
