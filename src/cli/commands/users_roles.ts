/** `latchkey users grant|revoke <username> <role>`. */
import { epochSeconds, systemClock } from '../../clock.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { visible } from '../terminal_text.js';
import { managementClient } from '../management_client.js';
import type { UserView } from '../../management/user_view.js';

export const usersGrantCommand = defineCommand({
  usage: 'latchkey users grant <username> <role>',
  positionals: { min: 2, max: 2 },
  options: {},
  remote: true,
  async run(context) {
    const [username = '', role = ''] = context.positionals;
    const remote = managementClient(context);
    if (remote) {
      const user = await remote.call<UserView>('PUT', `/users/${encodeURIComponent(username)}/roles/${encodeURIComponent(role)}`);
      context.stderr.write(`${visible(user.username)} now holds ${role}\n`);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    if (!(await store.findRole(role))) throw new CommandError(`no role "${role}" (roles list shows them)`);
    if (!(await store.grantRole(user.id, role, epochSeconds(systemClock)))) throw new CommandError(`could not grant ${role} to ${username}`);
    await cliAudit(context, 'user.role_granted', { userId: user.id, username: user.username, role });
    context.stderr.write(`${visible(user.username)} now holds ${role}\n`);
    return 0;
  },
});

export const usersRevokeCommand = defineCommand({
  usage: 'latchkey users revoke <username> <role>',
  positionals: { min: 2, max: 2 },
  options: {},
  remote: true,
  async run(context) {
    const [username = '', role = ''] = context.positionals;
    const remote = managementClient(context);
    if (remote) {
      const user = await remote.call<UserView>('DELETE', `/users/${encodeURIComponent(username)}/roles/${encodeURIComponent(role)}`);
      context.stderr.write(`${visible(user.username)} no longer holds ${role}\n`);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    if (!(await store.revokeRole(user.id, role))) throw new CommandError(`${user.username} does not hold "${role}"`);
    await cliAudit(context, 'user.role_revoked', { userId: user.id, username: user.username, role });
    context.stderr.write(`${visible(user.username)} no longer holds ${role}\n`);
    return 0;
  },
});
