import type { Command } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const clientsListCommand: Command = {
  path: ['clients', 'list'],
  summary: 'List client applications',
  usage: 'latchkey clients list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const clients = await store.listClients();
    if (context.values.json) {
      context.stdout.write(
        json(
          clients.map((c) => ({
            client_id: c.clientId,
            name: c.name,
            type: c.secretHash ? 'confidential' : 'public',
            redirect_uris: c.redirectUris,
            grant_types: c.grantTypes,
            require_pkce: c.requirePkce,
            first_party: c.firstParty,
            built_in: c.builtIn,
            created_at: isoTime(c.createdAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          clients.map((c) => [
            c.clientId,
            c.name,
            c.secretHash ? 'confidential' : 'public',
            c.grantTypes.join(','),
            c.redirectUris.join(' '),
          ]),
          ['CLIENT_ID', 'NAME', 'TYPE', 'GRANTS', 'REDIRECT_URIS'],
        ),
      );
    }
    return 0;
  },
};
