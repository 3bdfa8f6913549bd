import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';

export const usersEnableCommand = defineCommand({
  usage: 'latchkey users enable <username>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const username = context.positionals[0] ?? '';
    const store = await context.store();
    // Nothing issued before the account was disabled comes back: disabling ended all of it.
    if (!(await store.setUserDisabled(username, false, 0))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.enabled', { username });
    context.stderr.write(`Enabled user ${username}\n`);
    return 0;
  },
});
