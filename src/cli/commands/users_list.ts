import { userViews, type UserView } from '../../management/user_view.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';

export const usersListCommand = defineCommand({
  usage: 'latchkey users list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side (management/user_view.ts), so the output is the same too.
    const remote = managementClient(context);
    let users: UserView[];
    if (remote) {
      users = await remote.listAll<UserView>('/users');
    } else {
      const store = await context.store();
      users = await userViews(store, await store.listUsers());
    }
    if (context.values.json) {
      // How each role is held: by hand (`users grant`) or through an upstream group (until a sign-in without it).
      context.stdout.write(json(users));
    } else {
      context.stdout.write(
        table(
          users.map((u) => [
            u.username,
            u.email,
            u.name ?? '',
            u.disabled ? 'disabled' : 'active',
            u.created_at,
            u.source,
            u.roles.join(',') || '-',
            // The upstream identities that sign each user in (linked by email, or the one that made the user).
            [...new Set(u.identities.map((i) => i.connector))].join(',') || '-',
          ]),
          ['USERNAME', 'EMAIL', 'NAME', 'STATUS', 'CREATED', 'SOURCE', 'ROLES', 'LINKED'],
        ),
      );
    }
    return 0;
  },
});
