/**
 * `latchkey roles add|update|list|remove`: named bundles of API permissions given to people. Each
 * works on the database, or through the management API with --server (the same checks first, the
 * same output after: the list is built from one view, management/role_resource.ts).
 */
import { refuseManaged } from '../../directory/managed.js';
import { epochSeconds, systemClock } from '../../clock.js';
import {
  adminRole,
  permissionText,
  resolvePermissions,
  resolvePermissionsAmong,
  validGroupNames,
  validRoleDescription,
  validRoleName,
} from '../../directory/roles.js';
import type { ApiView } from '../../management/api_resource.js';
import { roleView, type RoleView } from '../../management/role_resource.js';
import type { Permission } from '../../store/store.js';
import { DuplicateError } from '../../store/store.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient, type ManagementClient } from '../management_client.js';
import { json, table } from '../output.js';

/** `<api>:<scope>` texts resolved against the APIs the server declares, as the database command resolves them. */
async function remotePermissions(remote: ManagementClient, texts: readonly string[]): Promise<Permission[]> {
  if (texts.length === 0) return [];
  return resolvePermissionsAmong(await remote.listAll<ApiView>('/apis'), texts);
}

const rolePath = (name: string) => `/roles/${encodeURIComponent(name)}`;

const permissionHelp = [
  'Options:',
  '  --permission <api>:<scope>  a scope an API declares (apis add --scope), e.g. https://api.example.com:read:reports;',
  '                              repeatable',
  '  --description <text>        what the role is for',
  '  --group <name>              an upstream group (OIDC, GitHub org:team, LDAP cn) whose members hold the role;',
  '                              exact name, repeatable',
  '',
].join('\n');

export const rolesAddCommand = defineCommand({
  usage: 'latchkey roles add <role> [--permission <api>:<scope>]... [--group <name>]... [--description <text>]',
  help: permissionHelp,
  positionals: { min: 1, max: 1 },
  options: { permission: { type: 'string', multiple: true }, group: { type: 'string', multiple: true }, description: { type: 'string' } },
  remote: true,
  async run(context) {
    const name = validRoleName(context.positionals[0] ?? '');
    const description = validRoleDescription(context.values.description);
    const remote = managementClient(context);
    const done = (permissions: Permission[]) =>
      context.stderr.write(
        `Created role ${name}${permissions.length === 0 ? ' (no permissions yet)' : ` with ${permissions.map(permissionText).join(', ')}`}\n`,
      );
    if (remote) {
      const permissions = await remotePermissions(remote, context.values.permission ?? []);
      const groups = validGroupNames(context.values.group ?? []);
      const created = await remote.call<RoleView>('POST', '/roles', { name, ...(description === undefined ? {} : { description }), permissions, groups });
      done(created.permissions);
      return 0;
    }
    const store = await context.store();
    const permissions = await resolvePermissions(store, context.values.permission ?? []);
    const groups = validGroupNames(context.values.group ?? []);
    try {
      await store.createRole({ name, description, permissions, groups, createdAt: epochSeconds(systemClock) });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`role "${name}" already exists (roles update changes it)`);
      throw err;
    }
    await cliAudit(context, 'role.created', { role: name, permissions: permissions.map(permissionText), groups });
    done(permissions);
    return 0;
  },
});

export const rolesUpdateCommand = defineCommand({
  usage: 'latchkey roles update <role> [--permission <api>:<scope>]... [--no-permissions] [--group <name>]... [--no-groups] [--description <text>]',
  help: permissionHelp,
  positionals: { min: 1, max: 1 },
  options: {
    permission: { type: 'string', multiple: true },
    'no-permissions': { type: 'boolean' },
    group: { type: 'string', multiple: true },
    'no-groups': { type: 'boolean' },
    description: { type: 'string' },
  },
  remote: true,
  async run(context) {
    const name = context.positionals[0] ?? '';
    const given = context.values.permission;
    const clear = context.values['no-permissions'] === true;
    if (given !== undefined && clear) throw new CommandError('--permission and --no-permissions cannot be combined');
    const givenGroups = context.values.group;
    const noGroups = context.values['no-groups'] === true;
    if (givenGroups !== undefined && noGroups) throw new CommandError('--group and --no-groups cannot be combined');
    const groups = noGroups ? [] : givenGroups === undefined ? undefined : validGroupNames(givenGroups);
    const nothing = 'nothing to change: give --permission, --no-permissions, --group, --no-groups or --description';
    const remote = managementClient(context);
    if (remote) {
      // Read first: a role that is not there, or is managed, is refused before the APIs are listed, as on the database.
      const role = await remote.call<RoleView>('GET', rolePath(name));
      refuseManaged('role', role.name, { managedBy: role.managed_by ?? undefined });
      const permissions = clear ? [] : given === undefined ? undefined : await remotePermissions(remote, given);
      const change = {
        ...(permissions === undefined ? {} : { permissions }),
        ...(groups === undefined ? {} : { groups }),
        ...(context.values.description === undefined ? {} : { description: validRoleDescription(context.values.description) ?? null }),
      };
      if (Object.keys(change).length === 0) throw new CommandError(nothing);
      await remote.call<RoleView>('PATCH', rolePath(name), change);
      context.stderr.write(`Updated role ${name}\n`);
      return 0;
    }
    const store = await context.store();
    refuseManaged('role', name, await store.findRole(name));
    const permissions = clear ? [] : given === undefined ? undefined : await resolvePermissions(store, given);
    const changes = {
      ...(permissions === undefined ? {} : { permissions }),
      ...(groups === undefined ? {} : { groups }),
      ...(context.values.description === undefined ? {} : { description: validRoleDescription(context.values.description) }),
    };
    if (Object.keys(changes).length === 0) throw new CommandError(nothing);
    if (!(await store.updateRole(name, changes))) throw new CommandError(`no role "${name}"`);
    await cliAudit(context, 'role.updated', {
      role: name,
      ...(permissions === undefined ? {} : { permissions: permissions.map(permissionText) }),
      ...(groups === undefined ? {} : { groups }),
    });
    context.stderr.write(`Updated role ${name}\n`);
    return 0;
  },
});

export const rolesListCommand = defineCommand({
  usage: 'latchkey roles list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side, so the output is the same too.
    const remote = managementClient(context);
    const roles: RoleView[] = remote ? await remote.listAll<RoleView>('/roles') : (await (await context.store()).listRoles()).map(roleView);
    if (context.values.json) {
      context.stdout.write(
        json(
          roles.map((r) => ({
            name: r.name,
            description: r.description,
            permissions: r.permissions.map(permissionText),
            groups: r.groups,
            managed_by: r.managed_by,
            built_in: r.built_in,
            members: r.members,
            created_at: r.created_at,
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          roles.map((r) => [
            r.name,
            String(r.members),
            r.built_in ? 'built-in' : '',
            r.permissions.map(permissionText).join(' ') || (r.name === adminRole ? '(the admin console)' : '-'),
            r.groups.join(' ') || '-',
          ]),
          ['ROLE', 'MEMBERS', '', 'PERMISSIONS', 'GROUPS'],
        ),
      );
    }
    return 0;
  },
});

export const rolesRemoveCommand = defineCommand({
  usage: 'latchkey roles remove <role>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const name = context.positionals[0] ?? '';
    if (name === adminRole) throw new CommandError(`${adminRole} is built in and cannot be removed`);
    const remote = managementClient(context);
    if (remote) {
      await remote.call('DELETE', rolePath(name));
      context.stderr.write(`Removed role ${name}\n`);
      return 0;
    }
    const store = await context.store();
    refuseManaged('role', name, await store.findRole(name));
    if (!(await store.removeRole(name))) throw new CommandError(`no role "${name}"`);
    await cliAudit(context, 'role.removed', { role: name });
    context.stderr.write(`Removed role ${name}\n`);
    return 0;
  },
});
