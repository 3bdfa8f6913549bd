/**
 * `latchkey connectors test <id>`: the check `connectors add` runs before saving
 * (connectors/connector_check.ts), on a stored connector — after a password changed upstream, a
 * certificate was renewed, or people report that a sign-in method fails. Exit 0 only when every
 * step that can be checked without a person works; otherwise the cause, and exit 1.
 */
import type { ConnectorCheck } from '../../connectors/connector_check.js';
import { checkConnector } from '../../connectors/connector_check.js';
import { connectorRedirectUri, typedConnector } from '../../connectors/connector_config.js';
import { connectorSecretContext } from '../../connectors/runtime.js';
import { CommandError, defineCommand, type CommandIo } from '../command.js';
import { managementClient } from '../management_client.js';
import { visible } from '../terminal_text.js';

const outcomeLabels = { passed: 'ok         ', failed: 'FAILED     ', not_checked: 'not checked' } as const;

/** The steps, one a line: what was checked and what was found. */
export function writeCheck(out: CommandIo['stdout'], result: Pick<ConnectorCheck, 'checks'>): void {
  for (const step of result.checks) out.write(`  ${outcomeLabels[step.outcome]}  ${visible(step.name)}: ${visible(step.detail)}\n`);
}

export const connectorsTestCommand = defineCommand({
  usage: 'latchkey connectors test <id>',
  help: [
    'Checks, without a person signing in, what every sign-in through the connector needs:',
    '  oidc: the discovery document names the configured issuer, the JWKS holds keys, the token endpoint accepts the client;',
    '  github: the API answers, GitHub accepts the client id and secret;',
    '  ldap: a connection (StartTLS when set), the service account bind, a search of the user (and group) base.',
    'Each request has the sign-in deadline (LATCHKEY_UPSTREAM_TIMEOUT); redirects are not followed.',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const id = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      // POST /api/v1/connectors/{id}/test: the server checks it from where it signs people in.
      const path = `/connectors/${encodeURIComponent(id)}`;
      const connector = await remote.call<{ type: string; name: string }>('GET', path);
      const result = await remote.call<ConnectorCheck>('POST', `${path}/test`);
      return report(context, id, connector, result);
    }
    const store = await context.store();
    const record = await store.findConnector(id);
    if (!record) throw new CommandError(`no connector "${id}"`);
    const typed = typedConnector(record);
    if (!typed) throw new CommandError(`connector ${id}: its stored settings are not valid for its type (remove it and add it again)`);
    let secret: string | undefined;
    try {
      secret = record.secret === undefined ? undefined : (await context.secretBox()).open(connectorSecretContext(id), record.secret);
    } catch {
      throw new CommandError(`connector ${id}: its stored secret cannot be opened with this server's secret key (LATCHKEY_SECRET_KEY): add it again`);
    }
    const config = context.config();
    const result = await checkConnector({ ...typed, secret }, { timeoutSeconds: config.upstreamTimeout, redirectUri: connectorRedirectUri(config.issuer, id) });
    return report(context, id, { type: typed.type, name: record.name }, result);
  },
});

function report(context: CommandIo, id: string, connector: { type: string; name: string }, result: Pick<ConnectorCheck, 'ok' | 'cause' | 'checks'>): number {
  context.stdout.write(`Connector ${id} (${connector.type}: ${visible(connector.name)})\n`);
  writeCheck(context.stdout, result);
  if (!result.ok) throw new CommandError(`connector ${id} does not work: ${result.cause ?? 'a check failed'}`);
  context.stdout.write(`Connector ${id} works, as far as can be checked without a person signing in.\n`);
  return 0;
}
