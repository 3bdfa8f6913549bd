/**
 * `latchkey config export [--format yaml|json]`: the APIs, roles, clients and connectors the
 * database holds, as a file `latchkey config apply` accepts. Secrets are references to
 * environment variables, never values.
 */
import { readDatabaseSnapshot } from '../../config_file/database_snapshot.js';
import { exportText } from '../../config_file/export.js';
import { CommandError, defineCommand, exitCodes } from '../command.js';

export const configExportCommand = defineCommand({
  usage: 'latchkey config export [--format yaml|json]',
  help: ['Options:', '  --format yaml|json  the file format (default yaml)', ''].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { format: { type: 'string' } },
  async run(context) {
    const format = context.values.format ?? 'yaml';
    if (format !== 'yaml' && format !== 'json') throw new CommandError('--format must be yaml or json', exitCodes.usage);
    context.stdout.write(exportText(await readDatabaseSnapshot(await context.store()), format));
    return exitCodes.ok;
  },
});
