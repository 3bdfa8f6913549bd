import { generateSecretKeyText } from '../../crypto/secret_box.js';
import { defineCommand } from '../command.js';

export const secretKeyGenerateCommand = defineCommand({
  usage: 'latchkey secret-key generate',
  positionals: { min: 0, max: 0 },
  options: {},
  async run(context) {
    context.stdout.write(`${generateSecretKeyText()}\n`);
    return 0;
  },
});
