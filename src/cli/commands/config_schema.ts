/** `latchkey config schema`: the JSON Schema of the configuration file, for editors to complete and check it. */
import { configurationJsonSchema } from '../../config_file/schema.js';
import { defineCommand, exitCodes } from '../command.js';

export const configSchemaCommand = defineCommand({
  usage: 'latchkey config schema',
  positionals: { min: 0, max: 0 },
  options: {},
  // Needs neither the database nor the server: with --server it prints the same document.
  remote: true,
  async run(context) {
    context.stdout.write(`${JSON.stringify(configurationJsonSchema(), null, 2)}\n`);
    return exitCodes.ok;
  },
});
