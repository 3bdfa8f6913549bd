/**
 * The time an admin command records for a revocation (a new password, revoke-tokens, a disabled
 * account, a removed client): the later of this machine's clock and the database's, so that a
 * machine whose clock is behind the servers' cannot let tokens they issued meanwhile survive.
 */
import { epochSeconds, systemClock } from '../clock.js';
import type { Store } from '../store/store.js';

export async function revocationTime(store: Store): Promise<number> {
  return Math.max(epochSeconds(systemClock), await store.databaseTime());
}
