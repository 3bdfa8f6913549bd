/**
 * `latchkey connectors add`: an upstream identity provider (oidc, github, ldap). Secrets come from
 * stdin only (never a command line, which other accounts can read) and are stored sealed with the
 * server's secret key. Prints the redirect URI to register upstream. Before saving, the upstream
 * is checked as `connectors test` checks it (connectors/connector_check.ts): a wrong issuer, a
 * dead directory or a refused bind is said now, to the operator, rather than later to every
 * person who tries to sign in. `--no-check` saves it unchecked (an upstream set up later).
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { checkConnector, type CheckableConnector } from '../../connectors/connector_check.js';
import {
  connectorIdPattern,
  connectorRedirectUri,
  githubConfigSchema,
  ldapConfigSchema,
  oidcConfigSchema,
  reservedConnectorIds,
} from '../../connectors/connector_config.js';
import { connectorWarnings, defaultConnectorName, newConnectorRecord } from '../../connectors/connector_setup.js';
import type { ConnectorCheck } from '../../connectors/connector_check.js';
import { validName } from '../../directory/validation.js';
import { DuplicateError, type ConnectorType } from '../../store/store.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, exitCodes, defineCommand, type CommandContext } from '../command.js';
import { readAll } from '../password_input.js';
import { issuerForAddresses } from '../server_address.js';
import { writeCheck } from './connectors_test.js';
import { managementClient } from '../management_client.js';
import type { z } from 'zod';

const usage = [
  'latchkey connectors add <id> --type oidc   --issuer URL --client-id ID [--client-secret-stdin]',
  '                             [--name "Acme SSO"] [--scope "openid email profile"] [--groups-claim groups] [--trust-email]',
  'latchkey connectors add <id> --type github --client-id ID --client-secret-stdin [--name GitHub] [--org ORG]... [--api-url URL]',
  'latchkey connectors add <id> --type ldap   --url ldap://HOST:PORT --bind-dn DN --bind-password-stdin',
  '                             --user-base DN [--user-filter "(uid={username})"] [--group-base DN] [--start-tls]',
  '                             [--no-check]',
].join('\n');

function settings<T>(schema: z.ZodType<T>, input: Record<string, unknown>): T {
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const option = String(issue?.path[0] ?? '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new CommandError(`--${option} ${issue?.message ?? 'is invalid'}`, exitCodes.usage);
  }
  return parsed.data;
}

/** The options that belong to one type only: given with another, they would silently do nothing. */
const optionTypes = [
  ['issuer', 'oidc'],
  ['scope', 'oidc'],
  ['groups-claim', 'oidc'],
  ['trust-email', 'oidc'],
  ['org', 'github'],
  ['api-url', 'github'],
  ['url', 'ldap'],
  ['bind-dn', 'ldap'],
  ['bind-password-stdin', 'ldap'],
  ['user-base', 'ldap'],
  ['user-filter', 'ldap'],
  ['group-base', 'ldap'],
  ['start-tls', 'ldap'],
] as const satisfies readonly (readonly [string, ConnectorType])[];

async function secretFromStdin(context: CommandContext, what: string): Promise<string> {
  const secret = (await readAll(context.stdin)).replace(/\r?\n$/, '');
  if (secret === '' || secret.length > 4096 || /[\r\n]/.test(secret))
    throw new CommandError(`${what} on standard input must be one line of 1-4096 characters`, exitCodes.usage);
  return secret;
}

export const connectorsAddCommand = defineCommand({
  usage,
  help: [
    'The redirect URI to register at an oidc or github upstream is printed: {issuer}/connectors/<id>/callback.',
    "Secrets are read from standard input and stored encrypted with the server's secret key.",
    '--trust-email (oidc): link a first sign-in to the local account with the same verified email, when the upstream says',
    "  it is verified; and take the upstream's email_verified for the users it creates. Only for a provider you trust to verify.",
    '--org (github): only members of these organizations may sign in; groups are org:team.',
    '--api-url (github): GitHub Enterprise, e.g. https://github.example.com/api/v3.',
    'LDAP directories sign in on the ordinary password form: a local account with a password owns its name; any other',
    'name goes to each directory in the order added, and the first that knows it answers.',
    'Before saving, the upstream is checked as `latchkey connectors test` checks it; a failed check adds nothing.',
    '--no-check: add it without checking (an upstream that is not set up yet).',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {
    type: { type: 'string' },
    name: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret-stdin': { type: 'boolean' },
    scope: { type: 'string' },
    'groups-claim': { type: 'string' },
    'trust-email': { type: 'boolean' },
    org: { type: 'string', multiple: true },
    'api-url': { type: 'string' },
    url: { type: 'string' },
    'bind-dn': { type: 'string' },
    'bind-password-stdin': { type: 'boolean' },
    'user-base': { type: 'string' },
    'user-filter': { type: 'string' },
    'group-base': { type: 'string' },
    'start-tls': { type: 'boolean' },
    'no-check': { type: 'boolean' },
  },
  remote: true,
  async run(context) {
    const id = context.positionals[0] ?? '';
    if (!connectorIdPattern.test(id))
      throw new CommandError('a connector id must be 1-63 lower-case letters, digits, - or _, starting with a letter or digit', exitCodes.usage);
    if (reservedConnectorIds.includes(id)) throw new CommandError(`"${id}" is reserved (it is the source of accounts made with users add)`, exitCodes.usage);
    const type = context.values.type;
    const v = context.values;
    for (const [option, belongsTo] of optionTypes) {
      if (v[option] !== undefined && type !== undefined && type !== belongsTo)
        throw new CommandError(`--${option} is for --type ${belongsTo} only`, exitCodes.usage);
    }
    if (v['client-secret-stdin'] !== undefined && type === 'ldap')
      throw new CommandError('--client-secret-stdin is for --type oidc and github (an ldap connector takes --bind-password-stdin)', exitCodes.usage);
    if (v['client-id'] !== undefined && type === 'ldap') throw new CommandError('--client-id is for --type oidc and github only', exitCodes.usage);
    let secret: string | undefined;
    let checkable: CheckableConnector;
    switch (type) {
      case 'oidc': {
        if (v.issuer === undefined || v['client-id'] === undefined) throw new CommandError('--type oidc needs --issuer and --client-id', exitCodes.usage);
        const oidc = settings(oidcConfigSchema, {
          issuer: v.issuer,
          clientId: v['client-id'],
          scope: v.scope,
          groupsClaim: v['groups-claim'],
          trustEmail: v['trust-email'] === true,
        });
        if (v['client-secret-stdin'] === true) secret = await secretFromStdin(context, 'the client secret');
        checkable = { type, config: oidc, secret };
        break;
      }
      case 'github': {
        if (v['client-id'] === undefined || v['client-secret-stdin'] !== true)
          throw new CommandError('--type github needs --client-id and --client-secret-stdin', exitCodes.usage);
        const github = settings(githubConfigSchema, { clientId: v['client-id'], orgs: v.org, apiUrl: v['api-url'] });
        secret = await secretFromStdin(context, 'the client secret');
        checkable = { type, config: github, secret };
        break;
      }
      case 'ldap': {
        if (v.url === undefined || v['bind-dn'] === undefined || v['user-base'] === undefined || v['bind-password-stdin'] !== true) {
          throw new CommandError('--type ldap needs --url, --bind-dn, --bind-password-stdin and --user-base', exitCodes.usage);
        }
        const ldap = settings(ldapConfigSchema, {
          url: v.url,
          bindDn: v['bind-dn'],
          userBase: v['user-base'],
          userFilter: v['user-filter'],
          groupBase: v['group-base'],
          startTls: v['start-tls'] === true,
        });
        secret = await secretFromStdin(context, 'the bind password');
        checkable = { type, config: ldap, secret };
        break;
      }
      default:
        throw new CommandError('--type must be oidc, github or ldap', exitCodes.usage);
    }
    // Said once the connector is added.
    const warnings = connectorWarnings(checkable);
    const name = validName(v.name) ?? defaultConnectorName(checkable);
    const remote = managementClient(context);
    if (remote) return addThroughServer(context, remote, id, checkable, name, v['no-check'] !== true);
    const store = await context.store();
    const box = await context.secretBox();
    if (await store.findConnector(id)) throw new CommandError(`connector "${id}" already exists`);
    if (v['no-check'] !== true) {
      const serverConfig = context.config();
      // Said before the requests go out: an upstream that does not answer takes the whole deadline.
      context.stderr.write(`Checking connector ${id} (${type}: ${name})\n`);
      const result = await checkConnector(checkable, {
        timeoutSeconds: serverConfig.upstreamTimeout,
        redirectUri: connectorRedirectUri(serverConfig.issuer, id),
      });
      writeCheck(context.stderr, result);
      if (!result.ok) {
        throw new CommandError(
          `connector ${id} not added: ${result.cause ?? 'a check failed'} (fix it and run this again, or add it unchecked with --no-check)`,
        );
      }
    }
    try {
      await store.createConnector(newConnectorRecord(box, { ...checkable, id, name }, epochSeconds(systemClock)));
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`connector "${id}" already exists`);
      throw err;
    }
    await cliAudit(context, 'connector.created', { connectorId: id, type });
    context.stderr.write(`Added connector ${id} (${type}: ${name})\n`);
    for (const warning of warnings) context.stderr.write(`warning: ${warning}\n`);
    if (type !== 'ldap') context.stdout.write(`redirect_uri: ${connectorRedirectUri(await issuerForAddresses(context), id)}\n`);
    return 0;
  },
});

/** The API's fields (the configuration file's, snake_case) of these settings. */
function apiFields(connector: CheckableConnector): Record<string, unknown> {
  const fields = Object.fromEntries(Object.entries(connector.config).map(([name, value]) => [name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), value]));
  const secretField = connector.type === 'ldap' ? 'bind_password' : 'client_secret';
  return { ...fields, ...(connector.secret === undefined ? {} : { [secretField]: connector.secret }) };
}

/**
 * `POST /api/v1/connectors`: the server checks the upstream (from where it will sign people in),
 * saves and audits it; the same lines are printed as on the database.
 */
async function addThroughServer(
  context: CommandContext,
  remote: NonNullable<ReturnType<typeof managementClient>>,
  id: string,
  checkable: CheckableConnector,
  name: string,
  check: boolean,
): Promise<number> {
  // Said before the request goes out: an upstream that does not answer takes the whole deadline.
  if (check) context.stderr.write(`Checking connector ${id} (${checkable.type}: ${name})\n`);
  const added = await remote.call<{ name: string; redirect_uri?: string; warnings: string[]; check: ConnectorCheck | null }>('POST', '/connectors', {
    id,
    type: checkable.type,
    name,
    ...apiFields(checkable),
    check,
  });
  if (added.check) writeCheck(context.stderr, added.check);
  context.stderr.write(`Added connector ${id} (${checkable.type}: ${added.name})\n`);
  for (const warning of added.warnings) context.stderr.write(`warning: ${warning}\n`);
  if (added.redirect_uri !== undefined) context.stdout.write(`redirect_uri: ${added.redirect_uri}\n`);
  return 0;
}
