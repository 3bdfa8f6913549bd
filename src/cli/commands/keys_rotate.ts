import { epochSeconds, systemClock } from '../../clock.js';
import { rotateSigningKeysNow } from '../../crypto/signing_key_rotation.js';
import { accessKeyFirst } from '../../management/key_resource.js';
import { defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';

export const keysRotateCommand = defineCommand({
  usage: 'latchkey keys rotate',
  positionals: { min: 0, max: 0 },
  options: {},
  remote: true,
  async run(context) {
    let keys: Array<{ kid: string; alg: string }>;
    const remote = managementClient(context);
    if (remote) {
      // POST /api/v1/keys/rotate: the server rotates (and audits) and answers the access-token key first.
      keys = (await remote.call<{ keys: Array<{ kid: string; alg: string }> }>('POST', '/keys/rotate')).keys;
    } else {
      const store = await context.store();
      // One new key for every algorithm that has an active key now or that the configuration needs
      // (not while `secret-key rotate` replaces the key the new signing keys are sealed with).
      const rotation = await rotateSigningKeysNow(context.config(), store, () => context.secretBox(), epochSeconds(systemClock));
      for (const key of rotation.keys) await cliAudit(context, 'key.rotated', { kid: key.kid, alg: key.alg });
      keys = accessKeyFirst(rotation.keys, rotation.previouslyActive, context.config().signingAlg);
    }
    context.stderr.write(
      `Rotated: new signing key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `${k.kid} (${k.alg})`).join(', ')} active (a running server picks ${keys.length > 1 ? 'them' : 'it'} up within a second)\n`,
    );
    // The access-token key first: scripts that read one line get the key new tokens are signed with.
    for (const key of keys) context.stdout.write(`${key.kid}\n`);
    return 0;
  },
});
