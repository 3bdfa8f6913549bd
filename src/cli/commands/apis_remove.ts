import { refuseManaged } from '../../directory/managed.js';
import { CommandError, defineCommand } from '../command.js';
import { builtInApiRefusal } from '../../management/management_api.js';

export const apisRemoveCommand = defineCommand({
  usage: 'latchkey apis remove <identifier>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const identifier = context.positionals[0] ?? '';
    const store = await context.store();
    refuseManaged('api', identifier, await store.findApi(identifier));
    const builtIn = await builtInApiRefusal(store, identifier, undefined);
    if (builtIn !== undefined) throw new CommandError(builtIn);
    if (!(await store.removeApi(identifier))) throw new CommandError(`no API "${identifier}"`);
    context.stderr.write(`Removed API ${identifier}\n`);
    return 0;
  },
});
