import { revocationTime } from '../revocation_time.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';

export const usersDisableCommand = defineCommand({
  usage: 'latchkey users disable <username>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const username = context.positionals[0] ?? '';
    const store = await context.store();
    if (!(await store.setUserDisabled(username, true, await revocationTime(store)))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.disabled', { username });
    context.stderr.write(`Disabled user ${username}\n`);
    return 0;
  },
});
