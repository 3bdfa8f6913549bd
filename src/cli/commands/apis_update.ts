import { refuseManaged } from '../../directory/managed.js';
import { validApiIdentifier, validName } from '../../directory/validation.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { introspectionClientIds, validIntrospectionClients } from './api_introspection_clients.js';
import { managementClient } from '../management_client.js';
import { validScopeNames } from '../../directory/roles.js';
import { builtInApiRefusal } from '../../management/management_api.js';

export const apisUpdateCommand = defineCommand({
  usage:
    'latchkey apis update <identifier> [--name <name>] [--scope <name>]... [--no-scopes] [--introspection-client <client_id>]... [--no-introspection-clients]',
  help: [
    'Options:',
    '  --name <name>                      a new name for the consent and device pages',
    '  --scope <name>                     replaces the permissions the API declares; repeatable (a scope taken away',
    '                                     is no longer issued, whatever roles and grants still name it)',
    '  --no-scopes                        declares none',
    '  --introspection-client <client_id> replaces the clients allowed to introspect tokens issued for this API',
    "  --no-introspection-clients         allows none (only a token's own client may introspect it)",
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
    'no-scopes': { type: 'boolean' },
    'introspection-client': { type: 'string', multiple: true },
    'no-introspection-clients': { type: 'boolean' },
  },
  remote: true,
  async run(context) {
    const identifier = validApiIdentifier(context.positionals[0] ?? '');
    const given = context.values['introspection-client'];
    const clear = context.values['no-introspection-clients'] === true;
    if (given !== undefined && clear) throw new CommandError('--introspection-client and --no-introspection-clients cannot be combined');
    const givenScopes = context.values.scope;
    const noScopes = context.values['no-scopes'] === true;
    if (givenScopes !== undefined && noScopes) throw new CommandError('--scope and --no-scopes cannot be combined');
    const scopes = givenScopes === undefined ? undefined : validScopeNames(givenScopes);
    const remote = managementClient(context);
    if (remote) {
      // PATCH /api/v1/apis/{identifier} with the fields given: the same refusals (unknown, managed, built-in scopes).
      const name = validName(context.values.name);
      await remote.call('PATCH', `/apis/${encodeURIComponent(identifier)}`, {
        ...(name === undefined ? {} : { name }),
        ...(noScopes ? { scopes: [] } : scopes === undefined ? {} : { scopes }),
        ...(clear ? { introspection_clients: [] } : given === undefined ? {} : { introspection_clients: introspectionClientIds(given) }),
      });
      context.stderr.write(`Updated API ${identifier}\n`);
      return 0;
    }
    const store = await context.store();
    const api = await store.findApi(identifier);
    if (!api) throw new CommandError(`no API "${identifier}"`);
    refuseManaged('api', identifier, api);
    const updated = {
      ...api,
      name: validName(context.values.name) ?? api.name,
      scopes: noScopes ? [] : (scopes ?? api.scopes),
      introspectionClients: clear ? [] : given === undefined ? api.introspectionClients : await validIntrospectionClients(store, given),
    };
    const builtIn = await builtInApiRefusal(store, identifier, updated.scopes);
    if (builtIn !== undefined) throw new CommandError(builtIn);
    if (!(await store.updateApi(updated))) throw new CommandError(`no API "${identifier}"`);
    await cliAudit(context, 'api.updated', { identifier, scopes: updated.scopes, introspectionClients: updated.introspectionClients });
    context.stderr.write(`Updated API ${identifier}\n`);
    return 0;
  },
});
