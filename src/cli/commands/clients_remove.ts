import { refuseManaged } from '../../directory/managed.js';
import { revocationTime } from '../revocation_time.js';
import { builtinCliClientId } from '../../bootstrap.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';

export const clientsRemoveCommand = defineCommand({
  usage: 'latchkey clients remove <client_id>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const clientId = context.positionals[0] ?? '';
    if (clientId === builtinCliClientId) throw new CommandError(`${builtinCliClientId} is built in and cannot be removed`);
    const remote = managementClient(context);
    if (remote) {
      // DELETE /api/v1/clients/{client_id}: the same refusals (unknown, managed); the server audits it.
      await remote.call('DELETE', `/clients/${encodeURIComponent(clientId)}`);
    } else {
      const store = await context.store();
      refuseManaged('client', clientId, await store.findClient(clientId));
      if (!(await store.removeClient(clientId, await revocationTime(store)))) throw new CommandError(`no client "${clientId}"`);
      await cliAudit(context, 'client.removed', { clientId });
    }
    context.stderr.write(`Removed client ${clientId}\n`);
    return 0;
  },
});
