/** `latchkey roles add|update|list|remove`: named bundles of API permissions given to people. */
import { epochSeconds, systemClock } from '../../clock.js';
import { adminRole, permissionText, resolvePermissions, validRoleDescription, validRoleName } from '../../directory/roles.js';
import { DuplicateError } from '../../store/store.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';

const permissionHelp = [
  'Options:',
  '  --permission <api>:<scope>  a scope an API declares (apis add --scope), e.g. https://api.example.com:read:reports;',
  '                              repeatable',
  '  --description <text>        what the role is for',
  '',
].join('\n');

export const rolesAddCommand = defineCommand({
  usage: 'latchkey roles add <role> [--permission <api>:<scope>]... [--description <text>]',
  help: permissionHelp,
  positionals: { min: 1, max: 1 },
  options: { permission: { type: 'string', multiple: true }, description: { type: 'string' } },
  async run(context) {
    const name = validRoleName(context.positionals[0] ?? '');
    const description = validRoleDescription(context.values.description);
    const store = await context.store();
    const permissions = await resolvePermissions(store, context.values.permission ?? []);
    try {
      await store.createRole({ name, description, permissions, createdAt: epochSeconds(systemClock) });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`role "${name}" already exists (roles update changes it)`);
      throw err;
    }
    await cliAudit(context, 'role.created', { role: name, permissions: permissions.map(permissionText) });
    context.stderr.write(`Created role ${name}${permissions.length === 0 ? ' (no permissions yet)' : ` with ${permissions.map(permissionText).join(', ')}`}\n`);
    return 0;
  },
});

export const rolesUpdateCommand = defineCommand({
  usage: 'latchkey roles update <role> [--permission <api>:<scope>]... [--no-permissions] [--description <text>]',
  help: permissionHelp,
  positionals: { min: 1, max: 1 },
  options: { permission: { type: 'string', multiple: true }, 'no-permissions': { type: 'boolean' }, description: { type: 'string' } },
  async run(context) {
    const name = context.positionals[0] ?? '';
    const given = context.values.permission;
    const clear = context.values['no-permissions'] === true;
    if (given !== undefined && clear) throw new CommandError('--permission and --no-permissions cannot be combined');
    const store = await context.store();
    const permissions = clear ? [] : given === undefined ? undefined : await resolvePermissions(store, given);
    const changes = {
      ...(permissions === undefined ? {} : { permissions }),
      ...(context.values.description === undefined ? {} : { description: validRoleDescription(context.values.description) }),
    };
    if (Object.keys(changes).length === 0) throw new CommandError('nothing to change: give --permission, --no-permissions or --description');
    if (!(await store.updateRole(name, changes))) throw new CommandError(`no role "${name}"`);
    await cliAudit(context, 'role.updated', { role: name, ...(permissions === undefined ? {} : { permissions: permissions.map(permissionText) }) });
    context.stderr.write(`Updated role ${name}\n`);
    return 0;
  },
});

export const rolesListCommand = defineCommand({
  usage: 'latchkey roles list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const roles = await (await context.store()).listRoles();
    if (context.values.json) {
      context.stdout.write(
        json(
          roles.map((r) => ({
            name: r.name,
            description: r.description ?? null,
            permissions: r.permissions.map(permissionText),
            built_in: r.builtIn,
            members: r.members,
            created_at: isoTime(r.createdAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          roles.map((r) => [
            r.name,
            String(r.members),
            r.builtIn ? 'built-in' : '',
            r.permissions.map(permissionText).join(' ') || (r.name === adminRole ? '(the admin console)' : '-'),
          ]),
          ['ROLE', 'MEMBERS', '', 'PERMISSIONS'],
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
  async run(context) {
    const name = context.positionals[0] ?? '';
    if (name === adminRole) throw new CommandError(`${adminRole} is built in and cannot be removed`);
    const store = await context.store();
    if (!(await store.removeRole(name))) throw new CommandError(`no role "${name}"`);
    await cliAudit(context, 'role.removed', { role: name });
    context.stderr.write(`Removed role ${name}\n`);
    return 0;
  },
});
