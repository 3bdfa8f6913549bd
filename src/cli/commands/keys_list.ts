import { epochSeconds, systemClock } from '../../clock.js';
import { retiredKeyRetention } from '../../config.js';
import { keyViews, type KeyView } from '../../management/key_resource.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';

export const keysListCommand = defineCommand({
  usage: 'latchkey keys list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side (management/key_resource.ts), so the output is the same too.
    const remote = managementClient(context);
    let keys: KeyView[];
    if (remote) {
      keys = await remote.listAll<KeyView>('/keys');
    } else {
      const store = await context.store();
      keys = keyViews(await store.listSigningKeys(), retiredKeyRetention(context.config()), epochSeconds(systemClock));
    }
    if (context.values.json) {
      context.stdout.write(json(keys));
    } else {
      context.stdout.write(
        table(
          // A key in the clear is marked where its status is read: it is not what it seems to be.
          keys.map((k) => [k.kid, k.alg, k.sealed ? k.status : `${k.status}, IN THE CLEAR`, k.created_at, k.published_until ?? '']),
          ['KID', 'ALG', 'STATUS', 'CREATED', 'IN JWKS UNTIL'],
        ),
      );
    }
    const clear = keys.filter((k) => !k.sealed);
    if (clear.length > 0)
      context.stderr.write(
        `latchkey: warning: ${clear.map((k) => k.kid).join(', ')}: the private key is stored in the clear (written by an older build or by hand): run latchkey secret-key rotate to encrypt it (a server whose other secrets are encrypted signs nothing with it until then)\n`,
      );
    return 0;
  },
});
