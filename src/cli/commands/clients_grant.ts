import { refuseManaged } from '../../directory/managed.js';
import { epochSeconds, systemClock } from '../../clock.js';
import { validApiIdentifier } from '../../directory/validation.js';
import { validScopeName } from '../../directory/roles.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';

export const clientsGrantCommand = defineCommand({
  usage: 'latchkey clients grant <client_id> <api> --scope <name>... | --remove',
  help: [
    'Options:',
    '  --scope <name>   a scope the API declares; repeatable. Replaces what the client was granted for that API',
    '  --remove         takes the grant away (tokens already issued stay valid until they expire)',
    '',
  ].join('\n'),
  positionals: { min: 2, max: 2 },
  options: { scope: { type: 'string', multiple: true }, remove: { type: 'boolean' } },
  async run(context) {
    const clientId = context.positionals[0] ?? '';
    const identifier = validApiIdentifier(context.positionals[1] ?? '');
    const given = context.values.scope ?? [];
    const store = await context.store();
    refuseManaged('client', clientId, await store.findClient(clientId));
    if (context.values.remove === true) {
      if (given.length > 0) throw new CommandError('--scope and --remove cannot be combined');
      if (!(await store.removeClientGrant(clientId, identifier))) throw new CommandError(`client "${clientId}" has no grant for ${identifier}`);
      await cliAudit(context, 'client.grant_removed', { clientId, api: identifier });
      context.stderr.write(`Removed the grant of ${clientId} for ${identifier}\n`);
      return 0;
    }
    if (given.length === 0) throw new CommandError('give at least one --scope (or --remove)');
    const client = await store.findClient(clientId);
    if (!client) throw new CommandError(`no client "${clientId}"`);
    const api = await store.findApi(identifier);
    if (!api) throw new CommandError(`no API "${identifier}"`);
    const scopes = [...new Set(given.map(validScopeName))];
    const undeclared = scopes.filter((s) => !api.scopes.includes(s));
    if (undeclared.length > 0) {
      throw new CommandError(
        `API ${identifier} declares no scope ${undeclared.join(', ')}${api.scopes.length === 0 ? ' (it declares none: apis update --scope)' : ` (it declares: ${api.scopes.join(', ')})`}`,
      );
    }
    await store.saveClientGrant({ clientId, api: identifier, scopes, createdAt: epochSeconds(systemClock) });
    await cliAudit(context, 'client.grant_saved', { clientId, api: identifier, scopes });
    if (!client.grantTypes.includes('client_credentials')) {
      context.stderr.write(`warning: ${clientId} is not registered for the client_credentials grant, so it cannot use this yet\n`);
    }
    context.stderr.write(`${clientId} may ask ${identifier} for: ${scopes.join(' ')}\n`);
    return 0;
  },
});
