import { refuseManaged } from '../../directory/managed.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { builtInApiRefusal } from '../../management/management_api.js';
import { managementClient } from '../management_client.js';

export const apisRemoveCommand = defineCommand({
  usage: 'latchkey apis remove <identifier>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const identifier = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      // DELETE /api/v1/apis/{identifier}: the same refusals (unknown, managed, the built-in API).
      await remote.call('DELETE', `/apis/${encodeURIComponent(identifier)}`);
    } else {
      const store = await context.store();
      refuseManaged('api', identifier, await store.findApi(identifier));
      const builtIn = await builtInApiRefusal(store, identifier, undefined);
      if (builtIn !== undefined) throw new CommandError(builtIn);
      if (!(await store.removeApi(identifier))) throw new CommandError(`no API "${identifier}"`);
      await cliAudit(context, 'api.removed', { identifier });
    }
    context.stderr.write(`Removed API ${identifier}\n`);
    return 0;
  },
});
