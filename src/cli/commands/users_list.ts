import { defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const usersListCommand = defineCommand({
  usage: 'latchkey users list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const [users, identities] = await Promise.all([store.listUsers(), store.listIdentities(undefined)]);
    // The upstream identities that sign each user in (linked by email, or the one that made the user).
    const linked = new Map<string, Array<{ connector: string; subject: string }>>();
    for (const i of identities) linked.set(i.userId, [...(linked.get(i.userId) ?? []), { connector: i.connectorId, subject: i.subject }]);
    if (context.values.json) {
      // How each role is held: by hand (`users grant`) or through an upstream group (until a sign-in without it).
      const sources = await Promise.all(users.map((u) => store.listUserRoleSources(u.id)));
      context.stdout.write(
        json(
          users.map((u, i) => ({
            id: u.id,
            username: u.username,
            email: u.email,
            name: u.name ?? null,
            disabled: u.disabled,
            source: u.source,
            groups: u.groups,
            roles: u.roles,
            direct_roles: sources[i]?.direct ?? [],
            group_roles: sources[i]?.group ?? [],
            identities: linked.get(u.id) ?? [],
            profile: u.profile,
            created_at: isoTime(u.createdAt),
            updated_at: isoTime(u.updatedAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          users.map((u) => [
            u.username,
            u.email,
            u.name ?? '',
            u.disabled ? 'disabled' : 'active',
            isoTime(u.createdAt),
            u.source,
            u.roles.join(',') || '-',
            [...new Set((linked.get(u.id) ?? []).map((i) => i.connector))].join(',') || '-',
          ]),
          ['USERNAME', 'EMAIL', 'NAME', 'STATUS', 'CREATED', 'SOURCE', 'ROLES', 'LINKED'],
        ),
      );
    }
    return 0;
  },
});
