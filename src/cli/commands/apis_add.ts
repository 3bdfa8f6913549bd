import { epochSeconds, systemClock } from '../../clock.js';
import { validApiIdentifier, validName } from '../../directory/validation.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { introspectionClientIds, validIntrospectionClients } from './api_introspection_clients.js';
import { managementClient } from '../management_client.js';
import { validScopeNames } from '../../directory/roles.js';

export const apisAddCommand = defineCommand({
  usage: 'latchkey apis add <identifier> [--name <name>] [--scope <name>]... [--introspection-client <client_id>]...',
  help: [
    'Options:',
    '  --name <name>                      what the consent and device pages call the API',
    '  --scope <name>                     a permission the API declares (e.g. read:reports); repeatable. Roles',
    '                                     and machine-client grants give these; tokens carry only what they allow',
    "  --introspection-client <client_id> a confidential client (the API's own server) allowed to introspect",
    '                                     tokens issued for this API at /oauth/introspect; repeatable',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { name: { type: 'string' }, scope: { type: 'string', multiple: true }, 'introspection-client': { type: 'string', multiple: true } },
  remote: true,
  async run(context) {
    const identifier = validApiIdentifier(context.positionals[0] ?? '');
    const name = validName(context.values.name) ?? identifier;
    const scopes = validScopeNames(context.values.scope ?? []);
    const remote = managementClient(context);
    if (remote) {
      // POST /api/v1/apis: the server checks the introspection clients as below and audits it.
      await remote.call('POST', '/apis', {
        identifier,
        name,
        scopes,
        introspection_clients: introspectionClientIds(context.values['introspection-client']),
      });
      context.stderr.write(`Registered API ${identifier}\n`);
      return 0;
    }
    const store = await context.store();
    const introspectionClients = await validIntrospectionClients(store, context.values['introspection-client']);
    try {
      await store.createApi({ identifier, name, createdAt: epochSeconds(systemClock), introspectionClients, scopes });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`API "${identifier}" already exists`);
      throw err;
    }
    await cliAudit(context, 'api.created', { identifier, scopes, introspectionClients });
    context.stderr.write(`Registered API ${identifier}\n`);
    return 0;
  },
});
