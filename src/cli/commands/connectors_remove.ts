import { cliAudit } from '../audit_log.js';
import { CommandError, type Command } from '../command.js';

export const connectorsRemoveCommand: Command = {
  path: ['connectors', 'remove'],
  summary: 'Remove an upstream identity provider (its users stay, but can no longer sign in through it)',
  usage: 'latchkey connectors remove <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const id = context.positionals[0] ?? '';
    const store = await context.store();
    if (!(await store.removeConnector(id))) throw new CommandError(`no connector "${id}"`);
    cliAudit(context, 'connector.removed', { connectorId: id });
    context.stderr.write(`Removed connector ${id}\n`);
    return 0;
  },
};
