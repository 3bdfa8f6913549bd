/**
 * `latchkey config export`: what the database holds (every API, role, client and connector, managed
 * or not; built-in ones left out) as a file `config apply` accepts. Deterministic — objects in the
 * store's order (identifiers in byte order, connectors in their sign-in order), fields in the
 * schema's order — so that export → apply on an empty database → export is byte-identical. A
 * secret is never printed: each is a reference to an environment variable named after its object.
 */
import { stringify } from 'yaml';
import { permissionText } from '../directory/roles.js';
import type { ClientGrantRecord, ClientRecord, ConnectorRecord, RoleRecord } from '../store/store.js';
import type { DatabaseSnapshot } from './plan.js';

export type ExportFormat = 'yaml' | 'json';

/** An identifier as part of an environment variable name: upper case, anything else `_`. */
function environmentPart(id: string): string {
  return id.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/**
 * The environment variable an exported file names for a secret, e.g. CLIENT_WEB_APP_SECRET: never
 * a LATCHKEY_* name, which a reference may not read (those are the server's own settings).
 */
export function secretEnvironmentName(object: 'client' | 'connector', id: string, field: 'secret' | 'client_secret' | 'bind_password'): string {
  return `${object.toUpperCase()}_${environmentPart(id)}_${field.toUpperCase()}`;
}

function exportedClient(client: ClientRecord, grants: readonly ClientGrantRecord[]): Record<string, unknown> {
  const confidential = client.secretHash !== undefined || client.jwksUri !== undefined || client.jwks !== undefined;
  return {
    client_id: client.clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    confidential,
    ...(client.secretHash === undefined ? {} : { client_secret: { env: secretEnvironmentName('client', client.clientId, 'secret') } }),
    first_party: client.firstParty,
    pkce: client.requirePkce,
    require_par: client.requirePar,
    web_origins: client.webOrigins,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    ...(client.backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: client.backchannelLogoutUri }),
    ...(client.jwksUri === undefined ? {} : { jwks_uri: client.jwksUri }),
    grants: grants.filter((g) => g.clientId === client.clientId).map((g) => ({ api: g.api, scopes: g.scopes })),
  };
}

function exportedRole(role: RoleRecord): Record<string, unknown> {
  return {
    name: role.name,
    ...(role.description === undefined ? {} : { description: role.description }),
    permissions: role.permissions.map(permissionText),
    groups: role.groups,
  };
}

/** A connector's settings under the file's snake_case names, in the schema's order; its secret as a reference. */
function exportedConnector(connector: ConnectorRecord): Record<string, unknown> {
  const c = connector.config;
  const head = { id: connector.id, type: connector.type, name: connector.name };
  const secret = (field: 'client_secret' | 'bind_password') =>
    connector.secret === undefined ? {} : { [field]: { env: secretEnvironmentName('connector', connector.id, field) } };
  const present = (key: string, value: unknown) => (value === undefined ? {} : { [key]: value });
  switch (connector.type) {
    case 'oidc':
      return {
        ...head,
        issuer: c.issuer,
        client_id: c.clientId,
        ...secret('client_secret'),
        scope: c.scope,
        ...present('groups_claim', c.groupsClaim),
        trust_email: c.trustEmail,
      };
    case 'github':
      return { ...head, client_id: c.clientId, ...secret('client_secret'), orgs: c.orgs, api_url: c.apiUrl };
    case 'ldap':
      return {
        ...head,
        url: c.url,
        bind_dn: c.bindDn,
        ...secret('bind_password'),
        user_base: c.userBase,
        user_filter: c.userFilter,
        ...present('group_base', c.groupBase),
        start_tls: c.startTls,
      };
  }
}

/** The configuration the database holds, as the file's object. */
export function exportedConfiguration(database: DatabaseSnapshot): Record<string, unknown> {
  const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    apis: [...database.apis]
      .sort((a, b) => byteOrder(a.identifier, b.identifier))
      .map((api) => ({ identifier: api.identifier, name: api.name, scopes: api.scopes, introspection_clients: api.introspectionClients })),
    // A built-in role is left out unless upstream groups grant it: that mapping is configuration.
    roles: [...database.roles]
      .filter((role) => !role.builtIn || role.groups.length > 0)
      .sort((a, b) => byteOrder(a.name, b.name))
      .map(exportedRole),
    clients: [...database.clients]
      .filter((client) => !client.builtIn)
      .sort((a, b) => byteOrder(a.clientId, b.clientId))
      .map((client) => exportedClient(client, database.grants)),
    connectors: [...database.connectors].sort((a, b) => a.position - b.position || byteOrder(a.id, b.id)).map(exportedConnector),
  };
}

export function exportText(database: DatabaseSnapshot, format: ExportFormat): string {
  const configuration = exportedConfiguration(database);
  if (format === 'json') return `${JSON.stringify(configuration, null, 2)}\n`;
  return stringify(configuration, { lineWidth: 0 });
}
