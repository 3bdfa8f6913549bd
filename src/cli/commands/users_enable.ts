import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';

export const usersEnableCommand = defineCommand({
  usage: 'latchkey users enable <username>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      await remote.call('PATCH', `/users/${encodeURIComponent(username)}`, { disabled: false });
      context.stderr.write(`Enabled user ${username}\n`);
      return 0;
    }
    const store = await context.store();
    // Nothing issued before the account was disabled comes back: disabling ended all of it.
    if (!(await store.setUserDisabled(username, false, 0))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.enabled', { username });
    context.stderr.write(`Enabled user ${username}\n`);
    return 0;
  },
});
