import { builtinCliClientId } from '../../bootstrap.js';
import { CommandError, type Command } from '../command.js';

export const clientsRemoveCommand: Command = {
  path: ['clients', 'remove'],
  summary: 'Remove a client application and everything issued to it',
  usage: 'latchkey clients remove <client_id>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const clientId = context.positionals[0] ?? '';
    if (clientId === builtinCliClientId) throw new CommandError(`${builtinCliClientId} is built in and cannot be removed`);
    const store = await context.store();
    if (!(await store.removeClient(clientId))) throw new CommandError(`no client "${clientId}"`);
    context.stderr.write(`Removed client ${clientId}\n`);
    return 0;
  },
};
