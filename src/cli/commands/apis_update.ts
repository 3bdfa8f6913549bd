import { validApiIdentifier, validName } from '../../admin/validation.js';
import { CommandError, type Command } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { validIntrospectionClients } from './api_introspection_clients.js';

export const apisUpdateCommand: Command = {
  path: ['apis', 'update'],
  summary: "Change an API's name or the clients that may introspect its tokens",
  usage: 'latchkey apis update <identifier> [--name <name>] [--introspection-client <client_id>]... [--no-introspection-clients]',
  help: [
    'Options:',
    '  --name <name>                      a new name for the consent and device pages',
    '  --introspection-client <client_id> replaces the clients allowed to introspect tokens issued for this API',
    '  --no-introspection-clients         allows none (only a token\'s own client may introspect it)',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { name: { type: 'string' }, 'introspection-client': { type: 'string', multiple: true }, 'no-introspection-clients': { type: 'boolean' } },
  async run(context) {
    const identifier = validApiIdentifier(context.positionals[0] ?? '');
    const given = context.values['introspection-client'] as string[] | undefined;
    const clear = context.values['no-introspection-clients'] === true;
    if (given !== undefined && clear) throw new CommandError('--introspection-client and --no-introspection-clients cannot be combined');
    const store = await context.store();
    const api = await store.findApi(identifier);
    if (!api) throw new CommandError(`no API "${identifier}"`);
    const updated = {
      ...api,
      name: validName(context.values.name as string | undefined) ?? api.name,
      introspectionClients: clear ? [] : given === undefined ? api.introspectionClients : await validIntrospectionClients(store, given),
    };
    if (!(await store.updateApi(updated))) throw new CommandError(`no API "${identifier}"`);
    cliAudit(context, 'api.updated', { identifier, introspectionClients: updated.introspectionClients });
    context.stderr.write(`Updated API ${identifier}\n`);
    return 0;
  },
};
