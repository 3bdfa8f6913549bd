/**
 * The configuration file at the server's start (LATCHKEY_CONFIG, `serve --config`): its APIs,
 * roles, clients and connectors applied as `latchkey config apply` applies them, without prune (a
 * start never deletes), before the server answers. A bad file stops the start with every problem.
 */
import { epochSeconds, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../crypto/secret_box.js';
import { DuplicateError, type Store } from '../store/store.js';
import { applyConfigurationFile } from './apply.js';
import { ConfigurationFileError } from './load.js';
import { configuredKeyMaterial } from './server_key_material.js';

/** The configuration file to apply at start: `--config`, else LATCHKEY_CONFIG; undefined for none. */
export function configurationFileAtStart(option: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const path = option ?? env.LATCHKEY_CONFIG;
  return path === undefined || path === '' ? undefined : path;
}

export interface StartServices {
  store(): Promise<Store>;
  secretBox(): Promise<SecretBox>;
  env: NodeJS.ProcessEnv;
  stderr: NodeJS.WritableStream;
  /** The server's settings: its issuer names the built-in API, which a file may not declare; its key material no reference may read. */
  config(): Pick<Config, 'issuer' | 'databasePath' | 'secretKeys' | 'secretKeyFile'>;
}

/** Applies the file: 'refused' (every problem written to stderr) stops the start. */
export async function applyConfigurationAtStart(context: StartServices, path: string): Promise<'applied' | 'refused'> {
  const apply = async () =>
    applyConfigurationFile(path, {
      store: await context.store(),
      secretBox: await context.secretBox(),
      env: context.env,
      now: epochSeconds(systemClock),
      prune: false,
      dryRun: false,
      actor: 'server',
      issuer: context.config().issuer,
      keyMaterial: configuredKeyMaterial(context.config(), context.env),
    });
  try {
    let result;
    try {
      result = await apply();
    } catch (err) {
      // Another instance sharing the database applied the same file at the same moment: plan again.
      if (!(err instanceof DuplicateError)) throw err;
      result = await apply();
    }
    if (result.plan.length > 0) context.stderr.write(`latchkey: applied ${result.plan.length} change(s) from ${result.path}\n`);
    return 'applied';
  } catch (err) {
    if (!(err instanceof ConfigurationFileError)) throw err;
    context.stderr.write(`latchkey: ${err.message}\n`);
    return 'refused';
  }
}
