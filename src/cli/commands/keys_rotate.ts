import { epochSeconds, systemClock } from '../../clock.js';
import { rotateSigningKeysNow } from '../../crypto/signing_key_rotation.js';
import { defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';

export const keysRotateCommand = defineCommand({
  usage: 'latchkey keys rotate',
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    const store = await context.store();
    // One new key for every algorithm that has an active key now or that the configuration needs
    // (not while `secret-key rotate` replaces the key the new signing keys are sealed with).
    const { keys, previouslyActive: active } = await rotateSigningKeysNow(context.config(), store, () => context.secretBox(), epochSeconds(systemClock));
    for (const key of keys) await cliAudit(context, 'key.rotated', { kid: key.kid, alg: key.alg });
    context.stderr.write(
      `Rotated: new signing key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `${k.kid} (${k.alg})`).join(', ')} active (a running server picks ${keys.length > 1 ? 'them' : 'it'} up within a second)\n`,
    );
    // The access-token key first: scripts that read one line get the key new tokens are signed with.
    // That is the server's non-RS256 key if it has one (RS256 then signs only id_tokens), whatever
    // this shell's LATCHKEY_SIGNING_ALG says.
    const accessAlg = active.find((alg) => alg !== 'RS256') ?? context.config().signingAlg;
    for (const key of [...keys].sort((a, b) => Number(b.alg === accessAlg) - Number(a.alg === accessAlg))) context.stdout.write(`${key.kid}\n`);
    return 0;
  },
});
