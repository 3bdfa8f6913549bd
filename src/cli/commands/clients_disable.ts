import { setClientDisabled } from '../../directory/client_status.js';
import { builtinCliClientId } from '../../bootstrap.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand, type Command } from '../command.js';
import { managementClient } from '../management_client.js';

function toggle(disabled: boolean): Command {
  return defineCommand({
    usage: `latchkey clients ${disabled ? 'disable' : 'enable'} <client_id>`,
    positionals: { min: 1, max: 1 },
    options: {},
    remote: true,
    async run(context) {
      const clientId = context.positionals[0] ?? '';
      if (disabled && clientId === builtinCliClientId) throw new CommandError(`${builtinCliClientId} is built in and cannot be disabled`);
      const remote = managementClient(context);
      if (remote) {
        // PATCH /api/v1/clients/{client_id} with `disabled`: the same effect on its live tokens; the server audits it.
        await remote.call('PATCH', `/clients/${encodeURIComponent(clientId)}`, { disabled });
      } else {
        if (!(await setClientDisabled(await context.store(), clientId, disabled))) throw new CommandError(`no client "${clientId}"`);
        await cliAudit(context, disabled ? 'client.disabled' : 'client.enabled', { clientId });
      }
      context.stderr.write(`${disabled ? 'Disabled' : 'Enabled'} client ${clientId}\n`);
      return 0;
    },
  });
}

export const clientsDisableCommand = toggle(true);
export const clientsEnableCommand = toggle(false);
