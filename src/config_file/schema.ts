/**
 * The configuration file (`latchkey config apply`, LATCHKEY_CONFIG): the zod schema that validates
 * it, gives its defaults and, through z.toJSONSchema, is the JSON Schema editors complete it with.
 * Field names are the contract's (snake_case, as the management API). Each field is checked by
 * the very rule the admin commands use (directory/validation.ts, directory/roles.ts,
 * connectors/connector_config.ts), so a file accepts exactly what `clients add` and its siblings do.
 * Secrets are references, `{ env: NAME }` or `{ file: PATH }`: a file kept in git never holds one.
 */
import { z } from 'zod';
import { githubConfigSchema, ldapConfigSchema, oidcConfigSchema, connectorIdPattern, reservedConnectorIds } from '../connectors/connector_config.js';
import { validJwksUri } from '../directory/clients.js';
import { serverSettingsSchema } from './server_settings.js';
import { validRoleDescription, validRoleName, validScopeNames } from '../directory/roles.js';
import {
  AdminInputError,
  hasControlCharacters,
  validApiIdentifier,
  validBackchannelLogoutUri,
  validClientId,
  validGrantTypes,
  validName,
  validRedirectUri,
  validWebOrigins,
} from '../directory/validation.js';

/**
 * A string checked (and cleaned) by one of the admin commands' rules: its AdminInputError becomes
 * the issue's message, so the file and the command line refuse a value in the same words.
 */
function checked<T>(base: z.ZodType<string>, rule: (value: string) => T) {
  return base.transform((value, ctx) => {
    try {
      return rule(value);
    } catch (err) {
      if (!(err instanceof AdminInputError)) throw err;
      ctx.issues.push({ code: 'custom', message: err.message, input: value });
      return z.NEVER;
    }
  });
}

/** A list checked as a whole by one rule (distinct values, a maximum), each element a string. */
function checkedList<T>(rule: (values: string[]) => T) {
  return z.array(z.string()).transform((values, ctx) => {
    try {
      return rule(values);
    } catch (err) {
      if (!(err instanceof AdminInputError)) throw err;
      ctx.issues.push({ code: 'custom', message: err.message, input: values });
      return z.NEVER;
    }
  });
}

const environmentName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name (letters, digits, _)');

/** A secret named, never given: read from the environment or a file when the file is applied. */
export const secretReferenceSchema = z.union([z.strictObject({ env: environmentName }), z.strictObject({ file: z.string().min(1).max(4096) })], {
  error: (issue) =>
    typeof issue.input === 'string' || typeof issue.input === 'number'
      ? 'a secret is never written in the file: use a reference, { env: NAME } or { file: PATH }'
      : 'must be a secret reference: { env: NAME } or { file: PATH }',
});
export type SecretReference = z.infer<typeof secretReferenceSchema>;

const displayName = checked(z.string(), (value) => validName(value)).optional();

export const apiSchema = z.strictObject({
  identifier: checked(z.string(), validApiIdentifier),
  name: displayName,
  scopes: checkedList(validScopeNames).default([]),
  /** Confidential clients (the API's own servers) that may introspect its tokens (RFC 7662 §4). */
  introspection_clients: z.array(z.string()).default([]),
});

/** An upstream group's name, as a connector reports it (an OIDC groups claim, a GitHub org:team, an LDAP group). */
const groupName = z
  .string()
  .min(1)
  .max(256)
  .refine((value) => !hasControlCharacters(value), 'must not contain control characters');

export const roleSchema = z.strictObject({
  name: checked(z.string(), validRoleName),
  description: checked(z.string(), validRoleDescription).optional(),
  /** `<api identifier>:<scope>`, resolved against the APIs of the file and of the database. */
  permissions: z.array(z.string().min(1).max(4096)).default([]),
  /** Upstream groups whose members hold the role, re-evaluated at each sign-in. */
  groups: z.array(groupName).default([]),
});

const redirectUri = checked(z.string(), (value) => validRedirectUri(value).uri);

export const clientGrantSchema = z.strictObject({
  api: z.string().min(1).max(2048),
  scopes: z.array(z.string().min(1).max(128)).default([]),
});

export const clientSchema = z
  .strictObject({
    client_id: checked(z.string(), validClientId),
    name: displayName,
    redirect_uris: z.array(redirectUri).default([]),
    grant_types: checkedList((values) => validGrantTypes(values)).default(['authorization_code', 'refresh_token']),
    /** A confidential client authenticates with `client_secret` or with keys at `jwks_uri` (private_key_jwt). */
    confidential: z.boolean().default(false),
    client_secret: secretReferenceSchema.optional(),
    first_party: z.boolean().default(false),
    /** Defaults to true for public clients, as `clients add` does (RFC 9700 §2.1.1). */
    pkce: z.boolean().optional(),
    require_par: z.boolean().default(false),
    web_origins: checkedList(validWebOrigins).default([]),
    post_logout_redirect_uris: z.array(redirectUri).default([]),
    backchannel_logout_uri: checked(z.string(), validBackchannelLogoutUri).optional(),
    jwks_uri: checked(z.string(), validJwksUri).optional(),
    /** What a machine client may ask client_credentials tokens for. */
    grants: z.array(clientGrantSchema).default([]),
  })
  .superRefine((client, ctx) => {
    // The same combinations `clients add` refuses.
    if (client.jwks_uri !== undefined && client.client_secret !== undefined)
      ctx.addIssue({ code: 'custom', path: ['client_secret'], message: 'a client authenticates with a secret or with its keys (jwks_uri), not both' });
    if (!client.confidential && client.client_secret !== undefined)
      ctx.addIssue({ code: 'custom', path: ['client_secret'], message: 'only a confidential client has a secret: add confidential: true' });
    if (!client.confidential && client.jwks_uri !== undefined)
      ctx.addIssue({ code: 'custom', path: ['jwks_uri'], message: 'a client that authenticates with its keys is confidential: add confidential: true' });
    if (client.grant_types.includes('client_credentials') && !client.confidential)
      ctx.addIssue({ code: 'custom', path: ['grant_types'], message: 'client_credentials is for confidential clients: add confidential: true' });
  });

const connectorId = z
  .string()
  .regex(connectorIdPattern, 'must be 1-63 lower-case letters, digits, - or _, starting with a letter or digit')
  .refine((value) => !reservedConnectorIds.includes(value), 'is reserved (it is the source of accounts made with users add)');

const oidc = oidcConfigSchema.shape;
const github = githubConfigSchema.shape;
const ldap = ldapConfigSchema.shape;

export const oidcConnectorSchema = z.strictObject({
  id: connectorId,
  type: z.literal('oidc'),
  name: displayName,
  issuer: oidc.issuer,
  client_id: oidc.clientId,
  client_secret: secretReferenceSchema.optional(),
  scope: oidc.scope,
  groups_claim: oidc.groupsClaim,
  trust_email: oidc.trustEmail,
});

export const githubConnectorSchema = z.strictObject({
  id: connectorId,
  type: z.literal('github'),
  name: displayName,
  client_id: github.clientId,
  client_secret: secretReferenceSchema,
  orgs: github.orgs,
  api_url: github.apiUrl,
});

export const ldapConnectorSchema = z.strictObject({
  id: connectorId,
  type: z.literal('ldap'),
  name: displayName,
  url: ldap.url,
  bind_dn: ldap.bindDn,
  bind_password: secretReferenceSchema,
  user_base: ldap.userBase,
  user_filter: ldap.userFilter,
  group_base: ldap.groupBase,
  start_tls: ldap.startTls,
});

export const connectorSchema = z.discriminatedUnion('type', [oidcConnectorSchema, githubConnectorSchema, ldapConnectorSchema], {
  error: 'type must be oidc, github or ldap',
});

export const configurationFileSchema = z.strictObject({
  /** Server settings (LATCHKEY_* by name, without the prefix, in lower case): checked here, read by the server's configuration. */
  server: serverSettingsSchema.optional(),
  apis: z.array(apiSchema).default([]),
  roles: z.array(roleSchema).default([]),
  clients: z.array(clientSchema).default([]),
  connectors: z.array(connectorSchema).default([]),
});

export type ConfigurationFile = z.infer<typeof configurationFileSchema>;
export type ApiDeclaration = z.infer<typeof apiSchema>;
export type RoleDeclaration = z.infer<typeof roleSchema>;
export type ClientDeclaration = z.infer<typeof clientSchema>;
export type ConnectorDeclaration = z.infer<typeof connectorSchema>;

/** The JSON Schema of the file (draft 2020-12), from the schema that validates it: what `latchkey config schema` prints. */
export function configurationJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(configurationFileSchema, { io: 'input', unrepresentable: 'any' }),
    title: 'Latchkey configuration file',
  };
}
