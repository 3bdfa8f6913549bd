/**
 * The plan of an apply: what must change in the database for it to hold what the file declares.
 * Each object the file declares is created, or updated with the fields that differ (old → new;
 * a secret as the reference it is read from, `{ env: NAME }` or `{ file: PATH }`, never its
 * value), or left alone when it already matches, so a
 * second apply plans nothing. With prune, the objects this file manages (managedBy = its path)
 * that it no longer declares are deleted: never an object it does not manage, never a built-in one.
 * Pure functions of the file, the database's objects and the context (sealing is passed in).
 */
import { constantTimeEqual, sha256 } from '../crypto/secrets.js';
import { plainClientFields } from '../directory/clients.js';
import { permissionText, resolvePermission } from '../directory/roles.js';
import { githubConfigSchema, ldapConfigSchema, oidcConfigSchema } from '../connectors/connector_config.js';
import type {
  ApiRecord,
  ClientGrantRecord,
  ClientRecord,
  ConfigurationChange,
  ConnectorRecord,
  ConnectorType,
  Permission,
  RoleRecord,
} from '../store/store.js';
import { apisAfterApply, secretKey } from './load.js';
import type { ApiDeclaration, ClientDeclaration, ConfigurationFile, ConnectorDeclaration, RoleDeclaration, SecretReference } from './schema.js';
import { referenceText } from './secret_reference.js';

export type ConfiguredObject = 'api' | 'role' | 'client' | 'connector';

/** What the database holds of the objects a file may declare. */
export interface DatabaseSnapshot {
  apis: readonly ApiRecord[];
  roles: readonly RoleRecord[];
  clients: readonly ClientRecord[];
  /** Every client's client_credentials grants. */
  grants: readonly ClientGrantRecord[];
  connectors: readonly ConnectorRecord[];
}

export interface PlanContext {
  /** The file's absolute path: what the objects it declares record as managedBy. */
  path: string;
  prune: boolean;
  /** Epoch seconds: createdAt of new objects, removedAt of deleted clients. */
  now: number;
  /** The values of the file's secret references (load.ts secretKey). */
  secrets: ReadonlyMap<string, string>;
  /** A connector secret sealed, and opened, with the server's secret key (connectors/runtime.ts's context). */
  sealConnectorSecret(id: string, value: string): string;
  openConnectorSecret(id: string, sealed: string): string | undefined;
  /** The built-in API's identifiers (load.ts DatabaseObjects): never pruned. */
  builtInApis?: readonly string[];
}

export interface FieldChange {
  field: string;
  from: string;
  to: string;
}

export interface PlannedChange {
  action: 'create' | 'update' | 'delete';
  object: ConfiguredObject;
  id: string;
  /** For an update: the fields that change. */
  fields: FieldChange[];
  /** For a create: where each secret it stores is read from (`{ env: NAME }`), for the reviewer of the plan. */
  references?: { field: string; reference: string }[];
  change: ConfigurationChange;
}

/** How a value is shown in the plan: JSON, and "(none)" for nothing. */
function shown(value: unknown): string {
  return value === undefined || value === null ? '(none)' : JSON.stringify(value);
}

/** Field names of the file, old → new (a secret goes through secretChange: its value is never shown). */
function compare(fields: [name: string, from: unknown, to: unknown][]): FieldChange[] {
  return fields.filter(([, from, to]) => JSON.stringify(from) !== JSON.stringify(to)).map(([field, from, to]) => ({ field, from: shown(from), to: shown(to) }));
}

/** A secret's change: from "(set)" or "(none)" (the database keeps no reference) to the reference it is now read from. */
function secretChange(field: string, had: boolean, reference: SecretReference | undefined, same: boolean): FieldChange[] {
  if (!had && reference === undefined) return [];
  if (had && reference !== undefined && same) return [];
  return [{ field, from: had ? '(set)' : '(none)', to: reference === undefined ? '(none)' : referenceText(reference) }];
}

/** A create's secret, as the plan names where it is read from. */
function createdSecret(field: string, reference: SecretReference | undefined): { references?: { field: string; reference: string }[] } {
  return reference === undefined ? {} : { references: [{ field, reference: referenceText(reference) }] };
}

/** JSON with the keys of every object sorted: the same settings compare equal whatever their order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function planApi(api: ApiDeclaration, existing: ApiRecord | undefined, context: PlanContext): PlannedChange | undefined {
  const record: ApiRecord = {
    identifier: api.identifier,
    name: api.name ?? api.identifier,
    scopes: api.scopes,
    introspectionClients: api.introspection_clients,
    createdAt: existing?.createdAt ?? context.now,
    managedBy: context.path,
  };
  if (existing === undefined) return { action: 'create', object: 'api', id: api.identifier, fields: [], change: { kind: 'create', object: 'api', record } };
  const fields = compare([
    ['name', existing.name, record.name],
    ['scopes', existing.scopes, record.scopes],
    ['introspection_clients', existing.introspectionClients, record.introspectionClients],
    ['managed_by', existing.managedBy, record.managedBy],
  ]);
  return fields.length === 0 ? undefined : { action: 'update', object: 'api', id: api.identifier, fields, change: { kind: 'update', object: 'api', record } };
}

function planRole(role: RoleDeclaration, existing: RoleRecord | undefined, apis: readonly ApiRecord[], context: PlanContext): PlannedChange | undefined {
  const resolved = new Map<string, Permission>();
  for (const text of role.permissions) {
    const permission = resolvePermission(apis, text);
    resolved.set(permissionText(permission), permission);
  }
  // Sorted by api, then scope, as the store keeps them.
  const permissions = [...resolved.values()].sort((a, b) => byteOrder(a.api, b.api) || byteOrder(a.scope, b.scope));
  const groups = [...new Set(role.groups)].sort(byteOrder);
  const record = { name: role.name, description: role.description, permissions, groups, managedBy: context.path };
  if (existing === undefined)
    return {
      action: 'create',
      object: 'role',
      id: role.name,
      fields: [],
      change: { kind: 'create', object: 'role', record: { ...record, createdAt: context.now } },
    };
  const fields = compare([
    ['description', existing.description, record.description],
    ['permissions', existing.permissions.map(permissionText), permissions.map(permissionText)],
    ['groups', existing.groups, groups],
    ['managed_by', existing.managedBy, record.managedBy],
  ]);
  return fields.length === 0 ? undefined : { action: 'update', object: 'role', id: role.name, fields, change: { kind: 'update', object: 'role', record } };
}

function planClient(
  client: ClientDeclaration,
  existing: ClientRecord | undefined,
  existingGrants: readonly ClientGrantRecord[],
  context: PlanContext,
): PlannedChange | undefined {
  const secret = context.secrets.get(secretKey('client', client.client_id));
  const secretHash = client.confidential && client.jwks_uri === undefined && secret !== undefined ? sha256(secret) : undefined;
  const sameSecret = existing?.secretHash !== undefined && secretHash !== undefined && constantTimeEqual(existing.secretHash, secretHash);
  const base: ClientRecord = existing ?? {
    clientId: client.client_id,
    name: client.client_id,
    secretHash: undefined,
    redirectUris: [],
    grantTypes: [],
    requirePkce: true,
    firstParty: false,
    builtIn: false,
    createdAt: context.now,
    tokensRevokedAt: undefined,
    postLogoutRedirectUris: [],
    webOrigins: [],
    backchannelLogoutUri: undefined,
    ...plainClientFields,
    managedBy: undefined,
  };
  const record: ClientRecord = {
    ...base,
    name: client.name ?? client.client_id,
    secretHash,
    // The sealed copy (client_secret_jwt) stays with the secret it seals.
    secretSealed: sameSecret ? base.secretSealed : undefined,
    redirectUris: [...new Set(client.redirect_uris)],
    grantTypes: client.grant_types,
    // As `clients add`: PKCE asked of public clients unless the file says otherwise.
    requirePkce: client.pkce ?? !client.confidential,
    firstParty: client.first_party,
    postLogoutRedirectUris: [...new Set(client.post_logout_redirect_uris)],
    webOrigins: client.web_origins,
    backchannelLogoutUri: client.backchannel_logout_uri,
    jwksUri: client.jwks_uri,
    // A stored key set (clients add --jwks-file) stays while the file declares a confidential client without secret or jwks_uri.
    jwks: client.confidential && client.jwks_uri === undefined && secretHash === undefined ? base.jwks : undefined,
    requirePar: client.require_par,
    managedBy: context.path,
  };
  const createdAt = new Map(existingGrants.map((g) => [g.api, g.createdAt]));
  const grants: ClientGrantRecord[] = client.grants.map((g) => ({
    clientId: client.client_id,
    api: g.api,
    scopes: [...new Set(g.scopes)],
    createdAt: createdAt.get(g.api) ?? context.now,
  }));
  const reference = secretHash === undefined ? undefined : client.client_secret;
  if (existing === undefined)
    return {
      action: 'create',
      object: 'client',
      id: client.client_id,
      fields: [],
      ...createdSecret('client_secret', reference),
      change: { kind: 'create', object: 'client', record, grants },
    };
  const grantList = (list: readonly ClientGrantRecord[]) => [...list].sort((a, b) => byteOrder(a.api, b.api)).map((g) => ({ api: g.api, scopes: g.scopes }));
  const fields = [
    ...compare([
      ['name', existing.name, record.name],
      ['redirect_uris', existing.redirectUris, record.redirectUris],
      ['grant_types', existing.grantTypes, record.grantTypes],
      ['confidential', existing.secretHash !== undefined || existing.jwksUri !== undefined || existing.jwks !== undefined, client.confidential],
    ]),
    ...secretChange('client_secret', existing.secretHash !== undefined, reference, sameSecret),
    ...compare([
      ['first_party', existing.firstParty, record.firstParty],
      ['pkce', existing.requirePkce, record.requirePkce],
      ['require_par', existing.requirePar, record.requirePar],
      ['web_origins', existing.webOrigins, record.webOrigins],
      ['post_logout_redirect_uris', existing.postLogoutRedirectUris, record.postLogoutRedirectUris],
      ['backchannel_logout_uri', existing.backchannelLogoutUri, record.backchannelLogoutUri],
      ['jwks_uri', existing.jwksUri, record.jwksUri],
      ['grants', grantList(existingGrants), grantList(grants)],
      ['managed_by', existing.managedBy, record.managedBy],
    ]),
  ];
  return fields.length === 0
    ? undefined
    : { action: 'update', object: 'client', id: client.client_id, fields, change: { kind: 'update', object: 'client', record, grants } };
}

/** The connector's settings as `connectors add` stores them (camelCase, defaults filled in), its default name and secret field. */
export function connectorSettings(connector: ConnectorDeclaration): {
  type: ConnectorType;
  config: Record<string, unknown>;
  defaultName: string;
  secretField: 'client_secret' | 'bind_password';
} {
  switch (connector.type) {
    case 'oidc': {
      const config = oidcConfigSchema.parse({
        issuer: connector.issuer,
        clientId: connector.client_id,
        scope: connector.scope,
        groupsClaim: connector.groups_claim,
        trustEmail: connector.trust_email,
      });
      return { type: 'oidc', config, defaultName: new URL(config.issuer).host, secretField: 'client_secret' };
    }
    case 'github': {
      const config = githubConfigSchema.parse({ clientId: connector.client_id, orgs: connector.orgs, apiUrl: connector.api_url });
      return { type: 'github', config, defaultName: 'GitHub', secretField: 'client_secret' };
    }
    case 'ldap': {
      const config = ldapConfigSchema.parse({
        url: connector.url,
        bindDn: connector.bind_dn,
        userBase: connector.user_base,
        userFilter: connector.user_filter,
        groupBase: connector.group_base,
        startTls: connector.start_tls,
      });
      return { type: 'ldap', config, defaultName: new URL(config.url.replace(/^ldaps?:/, 'http:')).host, secretField: 'bind_password' };
    }
  }
}

function planConnector(connector: ConnectorDeclaration, existing: ConnectorRecord | undefined, context: PlanContext): PlannedChange | undefined {
  const { type, config, defaultName, secretField } = connectorSettings(connector);
  const secret = context.secrets.get(secretKey('connector', connector.id));
  const current = existing?.secret === undefined ? undefined : context.openConnectorSecret(connector.id, existing.secret);
  const sameSecret = current !== undefined && secret !== undefined && constantTimeEqual(current, secret);
  const sealed = secret === undefined ? undefined : sameSecret ? existing?.secret : context.sealConnectorSecret(connector.id, secret);
  const record = { id: connector.id, type, name: connector.name ?? defaultName, config, secret: sealed, managedBy: context.path };
  const reference = secret === undefined ? undefined : connector.type === 'ldap' ? connector.bind_password : connector.client_secret;
  if (existing === undefined)
    return {
      action: 'create',
      object: 'connector',
      id: connector.id,
      fields: [],
      ...createdSecret(secretField, reference),
      change: { kind: 'create', object: 'connector', record: { ...record, createdAt: context.now } },
    };
  const fields = [
    ...compare([
      ['type', existing.type, type],
      ['name', existing.name, record.name],
    ]),
    ...(canonical(existing.config) === canonical(config) ? [] : [{ field: 'settings', from: canonical(existing.config), to: canonical(config) }]),
    ...secretChange(secretField, existing.secret !== undefined, reference, sameSecret),
    ...compare([['managed_by', existing.managedBy, record.managedBy]]),
  ];
  return fields.length === 0
    ? undefined
    : { action: 'update', object: 'connector', id: connector.id, fields, change: { kind: 'update', object: 'connector', record } };
}

/** The objects of one kind that prune deletes: managed by this file, not declared in it, not built in. */
function pruned<T extends { managedBy: string | undefined }>(
  records: readonly T[],
  declared: ReadonlySet<string>,
  id: (r: T) => string,
  context: PlanContext,
  builtIn: (r: T) => boolean,
): T[] {
  if (!context.prune) return [];
  return records.filter((r) => r.managedBy === context.path && !declared.has(id(r)) && !builtIn(r));
}

/**
 * The changes, in the order they are applied: APIs before the roles and grants that name their
 * scopes, then roles, clients, connectors; deletions last (clients before the APIs they are granted).
 */
export function planConfiguration(file: ConfigurationFile, database: DatabaseSnapshot, context: PlanContext): PlannedChange[] {
  const plan: PlannedChange[] = [];
  const push = (change: PlannedChange | undefined) => {
    if (change !== undefined) plan.push(change);
  };
  const apis = new Map(database.apis.map((a) => [a.identifier, a]));
  for (const api of file.apis) push(planApi(api, apis.get(api.identifier), context));
  const apisThen = apisAfterApply(file, database);
  const roles = new Map(database.roles.map((r) => [r.name, r]));
  for (const role of file.roles) push(planRole(role, roles.get(role.name), apisThen, context));
  const clients = new Map(database.clients.map((c) => [c.clientId, c]));
  for (const client of file.clients) {
    push(
      planClient(
        client,
        clients.get(client.client_id),
        database.grants.filter((g) => g.clientId === client.client_id),
        context,
      ),
    );
  }
  const connectors = new Map(database.connectors.map((c) => [c.id, c]));
  for (const connector of file.connectors) push(planConnector(connector, connectors.get(connector.id), context));

  const deleted = (object: ConfiguredObject, id: string, change: ConfigurationChange): PlannedChange => ({ action: 'delete', object, id, fields: [], change });
  const declaredClients = new Set(file.clients.map((c) => c.client_id));
  for (const c of pruned(
    database.clients,
    declaredClients,
    (r) => r.clientId,
    context,
    (r) => r.builtIn,
  ))
    plan.push(deleted('client', c.clientId, { kind: 'delete', object: 'client', id: c.clientId, now: context.now }));
  const declaredRoles = new Set(file.roles.map((r) => r.name));
  for (const r of pruned(
    database.roles,
    declaredRoles,
    (r) => r.name,
    context,
    (r) => r.builtIn,
  ))
    plan.push(deleted('role', r.name, { kind: 'delete', object: 'role', id: r.name }));
  const declaredConnectors = new Set(file.connectors.map((c) => c.id));
  for (const c of pruned(
    database.connectors,
    declaredConnectors,
    (r) => r.id,
    context,
    () => false,
  ))
    plan.push(deleted('connector', c.id, { kind: 'delete', object: 'connector', id: c.id }));
  const declaredApis = new Set(file.apis.map((a) => a.identifier));
  for (const a of pruned(
    database.apis,
    declaredApis,
    (r) => r.identifier,
    context,
    (r) => context.builtInApis?.includes(r.identifier) === true,
  ))
    plan.push(deleted('api', a.identifier, { kind: 'delete', object: 'api', id: a.identifier }));
  return plan;
}

const objectNames: Record<ConfiguredObject, string> = { api: 'API', role: 'role', client: 'client', connector: 'connector' };

/**
 * The plan as printed: `+ create` (with the reference each secret is read from), `~ update` with
 * `field: old → new` lines, `- delete`; or that nothing changes.
 */
export function planText(plan: readonly PlannedChange[]): string {
  if (plan.length === 0) return 'No changes: the database already holds what the file declares.\n';
  const lines: string[] = [];
  for (const step of plan) {
    const sign = step.action === 'create' ? '+' : step.action === 'update' ? '~' : '-';
    lines.push(`${sign} ${step.action} ${objectNames[step.object]} ${step.id}`);
    for (const { field, reference } of step.references ?? []) lines.push(`    ${field}: ${reference}`);
    for (const field of step.fields) lines.push(`    ${field.field}: ${field.from} → ${field.to}`);
  }
  const count = (action: PlannedChange['action']) => plan.filter((p) => p.action === action).length;
  lines.push(`Plan: ${count('create')} to create, ${count('update')} to update, ${count('delete')} to delete.`);
  return `${lines.join('\n')}\n`;
}
