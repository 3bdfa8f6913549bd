import { epochSeconds, systemClock } from '../../clock.js';
import { generateSigningKey } from '../../crypto/keys.js';
import type { Command } from '../command.js';
import { cliAudit } from '../audit_log.js';

export const keysRotateCommand: Command = {
  path: ['keys', 'rotate'],
  summary: 'Make a new signing key active now; old keys stay published until their tokens expire',
  usage: 'latchkey keys rotate',
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    const key = generateSigningKey();
    const now = epochSeconds(systemClock);
    await context.store().rotateSigningKey({ ...key, createdAt: now }, now);
    cliAudit(context, 'key.rotated', { kid: key.kid, alg: key.alg });
    context.stderr.write(`Rotated: new signing key ${key.kid} is active (a running server picks it up within a second)\n`);
    context.stdout.write(`${key.kid}\n`);
    return 0;
  },
};
