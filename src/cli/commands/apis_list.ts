import { apiView, type ApiView } from '../../management/api_resource.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';

export const apisListCommand = defineCommand({
  usage: 'latchkey apis list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side (management/api_resource.ts), so the output is the same too.
    const remote = managementClient(context);
    const apis: ApiView[] = remote ? await remote.listAll<ApiView>('/apis') : (await (await context.store()).listApis()).map(apiView);
    if (context.values.json) {
      context.stdout.write(
        json(
          apis.map((a) => ({
            identifier: a.identifier,
            name: a.name,
            scopes: a.scopes,
            introspection_clients: a.introspection_clients,
            created_at: a.created_at,
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          apis.map((a) => [a.identifier, a.name, a.created_at, a.scopes.join(' ') || '-', a.introspection_clients.join(',') || '-']),
          ['IDENTIFIER', 'NAME', 'CREATED', 'SCOPES', 'INTROSPECTION CLIENTS'],
        ),
      );
    }
    return 0;
  },
});
