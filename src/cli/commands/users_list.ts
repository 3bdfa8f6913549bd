import type { Command } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const usersListCommand: Command = {
  usage: 'latchkey users list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const users = await store.listUsers();
    if (context.values.json) {
      context.stdout.write(
        json(
          users.map((u) => ({
            id: u.id,
            username: u.username,
            email: u.email,
            name: u.name ?? null,
            disabled: u.disabled,
            source: u.source,
            groups: u.groups,
            roles: u.roles,
            profile: u.profile,
            created_at: isoTime(u.createdAt),
            updated_at: isoTime(u.updatedAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          users.map((u) => [u.username, u.email, u.name ?? '', u.disabled ? 'disabled' : 'active', isoTime(u.createdAt), u.source, u.roles.join(',') || '-']),
          ['USERNAME', 'EMAIL', 'NAME', 'STATUS', 'CREATED', 'SOURCE', 'ROLES'],
        ),
      );
    }
    return 0;
  },
};
