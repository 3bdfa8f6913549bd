import { defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const apisListCommand = defineCommand({
  usage: 'latchkey apis list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const apis = await store.listApis();
    if (context.values.json) {
      context.stdout.write(
        json(
          apis.map((a) => ({
            identifier: a.identifier,
            name: a.name,
            scopes: a.scopes,
            introspection_clients: a.introspectionClients,
            created_at: isoTime(a.createdAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          apis.map((a) => [a.identifier, a.name, isoTime(a.createdAt), a.scopes.join(' ') || '-', a.introspectionClients.join(',') || '-']),
          ['IDENTIFIER', 'NAME', 'CREATED', 'SCOPES', 'INTROSPECTION CLIENTS'],
        ),
      );
    }
    return 0;
  },
});
