/**
 * `latchkey config export [--format yaml|json]`: the APIs, roles, clients and connectors the
 * database holds, as a file `latchkey config apply` accepts. Secrets are references to
 * environment variables, never values.
 */
import { readDatabaseSnapshot } from '../../config_file/database_snapshot.js';
import { exportText } from '../../config_file/export.js';
import { isManagementApi } from '../../management/management_api.js';
import { CommandError, defineCommand, exitCodes } from '../command.js';

export const configExportCommand = defineCommand({
  usage: 'latchkey config export [--format yaml|json]',
  help: ['Options:', '  --format yaml|json  the file format (default yaml)', ''].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { format: { type: 'string' } },
  async run(context) {
    const format = context.values.format ?? 'yaml';
    if (format !== 'yaml' && format !== 'json') throw new CommandError('--format must be yaml or json', exitCodes.usage);
    const store = await context.store();
    const database = await readDatabaseSnapshot(store);
    // The built-in management API is the server's own (made at every start), not configuration.
    const apis = [];
    for (const api of database.apis) if (!(await isManagementApi(store, api.identifier))) apis.push(api);
    context.stdout.write(exportText({ ...database, apis }, format));
    return exitCodes.ok;
  },
});
