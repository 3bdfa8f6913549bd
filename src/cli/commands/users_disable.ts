import { revocationTime } from '../revocation_time.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';

export const usersDisableCommand = defineCommand({
  usage: 'latchkey users disable <username>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      await remote.call('PATCH', `/users/${encodeURIComponent(username)}`, { disabled: true });
      context.stderr.write(`Disabled user ${username}\n`);
      return 0;
    }
    const store = await context.store();
    if (!(await store.setUserDisabled(username, true, await revocationTime(store)))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.disabled', { username });
    context.stderr.write(`Disabled user ${username}\n`);
    return 0;
  },
});
