/**
 * The `connectors` resource (upstream identity providers): bodies use the configuration file's
 * fields (config_file/schema.ts: `{ id, type, name, …its options in snake_case… }`), except that a
 * secret — an oidc or github `client_secret`, an ldap `bind_password` — is given as its value, not
 * as a reference. Secrets are write-only: an answer says `has_secret`, never the secret.
 * `connectors list --json` prints the same view.
 */
import { z } from 'zod';
import { githubConnectorSchema, ldapConnectorSchema, oidcConnectorSchema } from '../config_file/schema.js';
import type { CheckableConnector, ConnectorCheck } from '../connectors/connector_check.js';
import {
  connectorRedirectUri,
  githubConfigSchema,
  ldapConfigSchema,
  oidcConfigSchema,
  type GithubConfig,
  type LdapConfig,
  type OidcConfig,
} from '../connectors/connector_config.js';
import type { ConnectorRecord } from '../store/store.js';
import { isoSeconds } from './user_view.js';

/** A secret's value: one line, as `connectors add` reads it from standard input. */
const secretValue = z
  .string()
  .min(1)
  .max(4096)
  .refine((v) => !/[\r\n]/.test(v), 'must be one line');

/** `check: false` adds it unchecked, as `connectors add --no-check` (an upstream not set up yet). */
const check = z.boolean().default(true);

const oidcCreate = oidcConnectorSchema.extend({ client_secret: secretValue.optional(), check });
const githubCreate = githubConnectorSchema.extend({ client_secret: secretValue, check });
const ldapCreate = ldapConnectorSchema.extend({ bind_password: secretValue, check });

export const connectorCreateSchema = z.discriminatedUnion('type', [oidcCreate, githubCreate, ldapCreate], {
  error: 'type must be oidc, github or ldap',
});
export type ConnectorCreate = z.output<typeof connectorCreateSchema>;

/** Any field of any type, each optional; what does not belong to the connector's type is refused. */
export const connectorPatchSchema = z.strictObject({
  name: oidcConnectorSchema.shape.name,
  issuer: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: secretValue.optional(),
  scope: z.string().optional(),
  groups_claim: z.string().optional(),
  trust_email: z.boolean().optional(),
  orgs: z.array(z.string()).optional(),
  api_url: z.string().optional(),
  url: z.string().optional(),
  bind_dn: z.string().optional(),
  bind_password: secretValue.optional(),
  user_base: z.string().optional(),
  user_filter: z.string().optional(),
  group_base: z.string().optional(),
  start_tls: z.boolean().optional(),
  check,
});
export type ConnectorPatch = z.output<typeof connectorPatchSchema>;

export const connectorIdParamsSchema = z.strictObject({ id: z.string().min(1).max(64) });

export const connectorViewSchema = z
  .object({
    id: z.string(),
    type: z.enum(['oidc', 'github', 'ldap']),
    name: z.string(),
    has_secret: z.boolean(),
    /** Where to register the callback upstream (oidc and github). */
    redirect_uri: z.string().optional(),
    created_at: z.string(),
    managed_by: z.string().optional(),
  })
  .catchall(z.unknown());
export type ConnectorView = z.infer<typeof connectorViewSchema>;

export const connectorCheckSchema = z.object({
  ok: z.boolean(),
  cause: z.string().nullable(),
  checks: z.array(z.object({ name: z.string(), outcome: z.enum(['passed', 'failed', 'not_checked']), detail: z.string() })),
});

export const connectorCreatedSchema = connectorViewSchema.and(z.object({ warnings: z.array(z.string()), check: connectorCheckSchema.nullable() }));

export const connectorRemovalSchema = z.object({
  id: z.string(),
  /** How many of the users it created were signed out. */
  users_signed_out: z.number().int(),
  /** Those that could not be (to sign out by hand with `users revoke-tokens`). */
  not_signed_out: z.array(z.string()),
});

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

export function connectorView(connector: ConnectorRecord, issuer: string): ConnectorView {
  const options = Object.fromEntries(Object.entries(connector.config).map(([name, value]) => [snake(name), value]));
  return {
    id: connector.id,
    type: connector.type,
    name: connector.name,
    ...options,
    has_secret: connector.secret !== undefined,
    ...(connector.type === 'ldap' ? {} : { redirect_uri: connectorRedirectUri(issuer, connector.id) }),
    created_at: isoSeconds(connector.createdAt),
    ...(connector.managedBy === undefined ? {} : { managed_by: connector.managedBy }),
  };
}

export function checkView(result: ConnectorCheck): z.infer<typeof connectorCheckSchema> {
  return { ok: result.ok, cause: result.cause ?? null, checks: result.checks };
}

/** The settings the store keeps (connector_config.ts) from the API's fields, with the secret apart. */
export function checkableOf(body: Record<string, unknown> & { type: 'oidc' | 'github' | 'ldap' }): CheckableConnector {
  switch (body.type) {
    case 'oidc':
      return {
        type: 'oidc',
        config: oidcConfigSchema.parse({
          issuer: body.issuer,
          clientId: body.client_id,
          scope: body.scope,
          groupsClaim: body.groups_claim,
          trustEmail: body.trust_email,
        }) satisfies OidcConfig,
        secret: body.client_secret as string | undefined,
      };
    case 'github':
      return {
        type: 'github',
        config: githubConfigSchema.parse({ clientId: body.client_id, orgs: body.orgs, apiUrl: body.api_url }) satisfies GithubConfig,
        secret: body.client_secret as string | undefined,
      };
    case 'ldap':
      return {
        type: 'ldap',
        config: ldapConfigSchema.parse({
          url: body.url,
          bindDn: body.bind_dn,
          userBase: body.user_base,
          userFilter: body.user_filter,
          groupBase: body.group_base,
          startTls: body.start_tls,
        }) satisfies LdapConfig,
        secret: body.bind_password as string | undefined,
      };
  }
}

/** The API's fields of each type (beyond id, type, name and check), for refusing others in a PATCH. */
export const connectorFields: Record<'oidc' | 'github' | 'ldap', readonly string[]> = {
  oidc: ['issuer', 'client_id', 'client_secret', 'scope', 'groups_claim', 'trust_email'],
  github: ['client_id', 'client_secret', 'orgs', 'api_url'],
  ldap: ['url', 'bind_dn', 'bind_password', 'user_base', 'user_filter', 'group_base', 'start_tls'],
};
