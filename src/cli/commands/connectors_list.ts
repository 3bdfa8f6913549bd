import { connectorRedirectUri } from '../../connectors/connector_config.js';
import { defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';
import { issuerForAddresses } from '../server_address.js';

/** What a listing shows of a connector's settings: where it points (never its secret). */
function target(config: Record<string, unknown>): string {
  return [config.issuer, config.apiUrl, config.url].find((v) => typeof v === 'string') ?? '';
}

export const connectorsListCommand = defineCommand({
  usage: 'latchkey connectors list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const connectors = await store.listConnectors();
    const issuer = await issuerForAddresses(context);
    if (context.values.json) {
      context.stdout.write(
        json(
          connectors.map((c) => ({
            id: c.id,
            type: c.type,
            name: c.name,
            ...c.config,
            has_secret: c.secret !== undefined,
            ...(c.type === 'ldap' ? {} : { redirect_uri: connectorRedirectUri(issuer, c.id) }),
            created_at: isoTime(c.createdAt),
          })),
        ),
      );
    } else {
      context.stdout.write(
        table(
          connectors.map((c) => [c.id, c.type, c.name, target(c.config), isoTime(c.createdAt)]),
          ['ID', 'TYPE', 'NAME', 'UPSTREAM', 'CREATED'],
        ),
      );
    }
    return 0;
  },
});
