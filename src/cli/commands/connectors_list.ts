import { connectorView, type ConnectorView } from '../../management/connector_resource.js';
import { defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';
import { issuerForAddresses } from '../server_address.js';

/** What a listing shows of a connector's settings: where it points (never its secret). */
function target(connector: ConnectorView): string {
  return [connector.issuer, connector.api_url, connector.url].find((v) => typeof v === 'string') ?? '';
}

export const connectorsListCommand = defineCommand({
  usage: 'latchkey connectors list [--json]',
  positionals: { min: 0, max: 0 },
  options: { json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    // The same views from either side (management/connector_resource.ts), so the output is the same too.
    const remote = managementClient(context);
    let connectors: ConnectorView[];
    if (remote) {
      connectors = await remote.listAll<ConnectorView>('/connectors');
    } else {
      const store = await context.store();
      const issuer = await issuerForAddresses(context);
      connectors = (await store.listConnectors()).map((c) => connectorView(c, issuer));
    }
    if (context.values.json) {
      context.stdout.write(json(connectors));
    } else {
      context.stdout.write(
        table(
          connectors.map((c) => [c.id, c.type, c.name, target(c), c.created_at]),
          ['ID', 'TYPE', 'NAME', 'UPSTREAM', 'CREATED'],
        ),
      );
    }
    return 0;
  },
});
