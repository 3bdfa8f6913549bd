import { clientView, type ClientView } from '../../management/client_resource.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';

export const clientsListCommand = defineCommand({
  usage: 'latchkey clients list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side (management/client_resource.ts), so the output is the same too.
    const remote = managementClient(context);
    let clients: ClientView[];
    if (remote) {
      clients = await remote.listAll<ClientView>('/clients');
    } else {
      const store = await context.store();
      const grants = await store.listClientGrants(undefined);
      clients = (await store.listClients()).map((c) => clientView(c, grants));
    }
    if (context.values.json) {
      context.stdout.write(
        json(
          clients.map((c) => ({
            client_id: c.client_id,
            name: c.name,
            type: c.confidential ? 'confidential' : 'public',
            // How the client authenticates at the token endpoint.
            authentication: c.authentication,
            disabled: c.disabled,
            // Made through POST /oauth/register (RFC 7591) rather than by an operator.
            registered: c.registered,
            ...(c.jwks_uri === undefined ? {} : { jwks_uri: c.jwks_uri }),
            ...(c.previous_secret_expires_at === undefined ? {} : { previous_secret_expires_at: c.previous_secret_expires_at }),
            api_grants: c.grants,
            redirect_uris: c.redirect_uris,
            web_origins: c.web_origins,
            grant_types: c.grant_types,
            require_pkce: c.pkce,
            require_par: c.require_par,
            first_party: c.first_party,
            built_in: c.built_in,
            created_at: c.created_at,
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          clients.map((c) => [
            c.client_id,
            c.name,
            (c.confidential ? 'confidential' : 'public') + (c.require_par ? ', PAR required' : '') + (c.disabled ? ' (disabled)' : ''),
            c.grant_types.join(','),
            c.redirect_uris.join(' '),
            c.web_origins.join(' '),
          ]),
          ['CLIENT_ID', 'NAME', 'TYPE', 'GRANTS', 'REDIRECT_URIS', 'WEB_ORIGINS'],
        ),
      );
    }
    return 0;
  },
});
