import { epochSeconds, systemClock } from '../../clock.js';
import { validApiIdentifier, validName } from '../../admin/validation.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, type Command } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { validIntrospectionClients } from './api_introspection_clients.js';

export const apisAddCommand: Command = {
  path: ['apis', 'add'],
  summary: 'Register an API (an audience tokens can be issued for)',
  usage: 'latchkey apis add <identifier> [--name <name>] [--introspection-client <client_id>]...',
  help: [
    'Options:',
    '  --name <name>                      what the consent and device pages call the API',
    "  --introspection-client <client_id> a confidential client (the API's own server) allowed to introspect",
    '                                     tokens issued for this API at /oauth/introspect; repeatable',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { name: { type: 'string' }, 'introspection-client': { type: 'string', multiple: true } },
  async run(context) {
    const identifier = validApiIdentifier(context.positionals[0] ?? '');
    const name = validName(context.values.name as string | undefined) ?? identifier;
    const store = await context.store();
    const introspectionClients = await validIntrospectionClients(store, context.values['introspection-client'] as string[] | undefined);
    try {
      await store.createApi({ identifier, name, createdAt: epochSeconds(systemClock), introspectionClients });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`API "${identifier}" already exists`);
      throw err;
    }
    cliAudit(context, 'api.created', { identifier, introspectionClients });
    context.stderr.write(`Registered API ${identifier}\n`);
    return 0;
  },
};
