/**
 * What the server warns about at start, once (the primary of a cluster): files holding secrets
 * that other users of the machine could read. Reported, not changed: the operator decides.
 */
import type { Config } from './config.js';
import { keyFileIsLoose } from './crypto/secret_key_file.js';
import type { Store } from './store/store.js';

export function startupWarnings(config: Config, store: Store): string[] {
  const warnings = [...(store.permissionWarnings ?? [])];
  if (store.vacuumConversion === 'busy') {
    warnings.push(
      'the database could not be converted to incremental vacuum (another process was writing): freed space is given back once a later start converts it',
    );
  }
  const keyFile = config.secretKeyFile;
  if (config.secretKeys === undefined && keyFile !== undefined && keyFileIsLoose(keyFile)) {
    warnings.push(`the secret key file ${keyFile} can be read by other users: run chmod 600 ${keyFile}`);
  }
  return warnings;
}
