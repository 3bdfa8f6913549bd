import { GrantRefusal, grantClientScopes, removeClientGrant } from '../../directory/client_grants.js';
import { epochSeconds, systemClock } from '../../clock.js';
import { validApiIdentifier } from '../../directory/validation.js';
import { validScopeName } from '../../directory/roles.js';
import type { ClientView } from '../../management/client_resource.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';

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
  remote: true,
  async run(context) {
    const clientId = context.positionals[0] ?? '';
    const identifier = validApiIdentifier(context.positionals[1] ?? '');
    const given = context.values.scope ?? [];
    const remove = context.values.remove === true;
    if (remove && given.length > 0) throw new CommandError('--scope and --remove cannot be combined');
    if (!remove && given.length === 0) throw new CommandError('give at least one --scope (or --remove)');
    const scopes = [...new Set(given.map(validScopeName))];
    const remote = managementClient(context);
    // The grant as a sub-resource of the client; the API identifier is one URL-encoded path segment.
    const grantPath = `/clients/${encodeURIComponent(clientId)}/grants/${encodeURIComponent(identifier)}`;
    try {
      if (remove) {
        if (remote) await remote.call('DELETE', grantPath);
        else {
          await removeClientGrant(await context.store(), clientId, identifier);
          await cliAudit(context, 'client.grant_removed', { clientId, api: identifier });
        }
        context.stderr.write(`Removed the grant of ${clientId} for ${identifier}\n`);
        return 0;
      }
      let grantTypes: readonly string[];
      if (remote) {
        // The server checks as grantClientScopes does (the client and API exist, the API declares each scope) and audits it.
        grantTypes = (await remote.call<ClientView>('GET', `/clients/${encodeURIComponent(clientId)}`)).grant_types;
        await remote.call('PUT', grantPath, { scopes });
      } else {
        ({ grantTypes } = await grantClientScopes(await context.store(), clientId, identifier, scopes, epochSeconds(systemClock)));
        await cliAudit(context, 'client.grant_saved', { clientId, api: identifier, scopes });
      }
      if (!grantTypes.includes('client_credentials')) {
        context.stderr.write(`warning: ${clientId} is not registered for the client_credentials grant, so it cannot use this yet\n`);
      }
      context.stderr.write(`${clientId} may ask ${identifier} for: ${scopes.join(' ')}\n`);
      return 0;
    } catch (err) {
      if (err instanceof GrantRefusal) throw new CommandError(err.message);
      throw err;
    }
  },
});
