/**
 * The `clients` resource: its bodies use the configuration file's field names and rules
 * (config_file/schema.ts), so the API, the file and `clients add` accept the same values. The
 * secret is never part of a body sent in: the server makes it and answers it once (create, rotate).
 */
import { z } from 'zod';
import { isConfidential } from '../oauth/client_type.js';
import { clientGrantSchema, clientSchema } from '../config_file/schema.js';
import { validScopeName } from '../directory/roles.js';
import type { ApiRecord, ClientGrantRecord, ClientRecord, Store } from '../store/store.js';
import { maxRegistrationTokenSeconds } from '../directory/registration_tokens.js';
import { listQuerySchema } from './pagination.js';
import { Problem } from './problem.js';
import { isoSeconds } from './user_view.js';

const fields = clientSchema.shape;

/** A field without its default, for a partial update: an absent field is left as it is. */
function unset<T extends z.ZodType>(field: z.ZodDefault<T>) {
  return field.unwrap().optional();
}

export const clientCreateSchema = z
  .strictObject({
    client_id: fields.client_id,
    name: fields.name,
    redirect_uris: fields.redirect_uris,
    grant_types: fields.grant_types,
    /** A confidential client gets a secret, answered once, unless it authenticates with keys at jwks_uri. */
    confidential: fields.confidential,
    first_party: fields.first_party,
    pkce: fields.pkce,
    require_par: fields.require_par,
    web_origins: fields.web_origins,
    post_logout_redirect_uris: fields.post_logout_redirect_uris,
    backchannel_logout_uri: fields.backchannel_logout_uri,
    jwks_uri: fields.jwks_uri,
    grants: fields.grants,
  })
  .superRefine((client, ctx) => {
    // The combinations `clients add` refuses.
    if (!client.confidential && client.jwks_uri !== undefined)
      ctx.addIssue({ code: 'custom', path: ['jwks_uri'], message: 'a client that authenticates with its keys is confidential: add confidential: true' });
    if (client.grant_types.includes('client_credentials') && !client.confidential)
      ctx.addIssue({ code: 'custom', path: ['grant_types'], message: 'client_credentials is for confidential clients: add confidential: true' });
  });

export const clientPatchSchema = z.strictObject({
  name: fields.name,
  redirect_uris: unset(fields.redirect_uris),
  grant_types: unset(fields.grant_types),
  first_party: unset(fields.first_party),
  pkce: fields.pkce,
  web_origins: unset(fields.web_origins),
  post_logout_redirect_uris: unset(fields.post_logout_redirect_uris),
  /** null removes it. */
  backchannel_logout_uri: fields.backchannel_logout_uri.unwrap().nullable().optional(),
  /** Replaces the client's grants as a whole. */
  grants: unset(fields.grants),
  /** As `clients disable/enable`: a disabled client cannot sign anyone in, and its live tokens stop working. */
  disabled: z.boolean().optional(),
});

export const clientIdParamsSchema = z.strictObject({ client_id: z.string().min(1).max(256) });

/** `GET /clients` filters: by a grant type the client may use, and by confidential or public. */
export const clientListQuerySchema = listQuerySchema.extend({
  grant_type: z.enum(['authorization_code', 'device_code', 'refresh_token', 'client_credentials']).optional(),
  confidential: z.enum(['true', 'false']).optional(),
});

/** A grant's API travels URL-encoded as one path segment, as /apis/{identifier} does. */
export const clientGrantParamsSchema = clientIdParamsSchema.extend({ api: z.string().min(1).max(2048) });

/** `PUT /clients/{client_id}/grants/{api}`: the scopes replace what the client was granted for that API. */
export const clientGrantBodySchema = z.strictObject({ scopes: clientGrantSchema.shape.scopes.unwrap().min(1) });

export const clientGrantViewSchema = z.object({ api: z.string(), scopes: z.array(z.string()) });

/** `POST /clients/registration-tokens`: how long the initial access token can be used. */
export const registrationTokenBodySchema = z.strictObject({ expires_in: z.number().int().min(1).max(maxRegistrationTokenSeconds).optional() }).optional();

/** The one answer that carries an initial access token for dynamic client registration (RFC 7591 §3). */
export const registrationTokenSchema = z.object({ token: z.string(), expires_at: z.string(), registration_endpoint: z.string() });

export const clientViewSchema = z.object({
  client_id: z.string(),
  name: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  confidential: z.boolean(),
  first_party: z.boolean(),
  pkce: z.boolean(),
  require_par: z.boolean(),
  web_origins: z.array(z.string()),
  post_logout_redirect_uris: z.array(z.string()),
  backchannel_logout_uri: z.string().optional(),
  jwks_uri: z.string().optional(),
  grants: z.array(z.object({ api: z.string(), scopes: z.array(z.string()) })),
  /** How it authenticates at the token endpoint: client_secret, private_key_jwt or none (public). */
  authentication: z.enum(['client_secret', 'private_key_jwt', 'none']),
  /** Until when a rotated-out secret still works (`rotate-secret --keep-old-for`). */
  previous_secret_expires_at: z.string().optional(),
  disabled: z.boolean(),
  built_in: z.boolean(),
  /** Made through POST /oauth/register (RFC 7591) rather than by an operator. */
  registered: z.boolean(),
  /** The configuration file that declares the client; changes through the API are refused then. */
  managed_by: z.string().optional(),
  created_at: z.string(),
});
export type ClientView = z.infer<typeof clientViewSchema>;

/** A created confidential client, or one whose secret was rotated: the one answer that carries the secret. */
export const clientWithSecretSchema = clientViewSchema.extend({ client_secret: z.string().optional() });

export function clientView(client: ClientRecord, grants: readonly ClientGrantRecord[]): ClientView {
  return {
    client_id: client.clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    grant_types: client.grantTypes,
    confidential: isConfidential(client),
    first_party: client.firstParty,
    pkce: client.requirePkce,
    require_par: client.requirePar,
    web_origins: client.webOrigins,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    ...(client.backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: client.backchannelLogoutUri }),
    ...(client.jwksUri === undefined ? {} : { jwks_uri: client.jwksUri }),
    grants: grants.filter((g) => g.clientId === client.clientId).map((g) => ({ api: g.api, scopes: g.scopes })),
    authentication: client.jwksUri !== undefined || client.jwks !== undefined ? 'private_key_jwt' : client.secretHash !== undefined ? 'client_secret' : 'none',
    ...(client.previousSecretExpiresAt === undefined ? {} : { previous_secret_expires_at: isoSeconds(client.previousSecretExpiresAt) }),
    disabled: client.disabled,
    built_in: client.builtIn,
    registered: client.registrationAccessTokenHash !== undefined,
    ...(client.managedBy === undefined ? {} : { managed_by: client.managedBy }),
    created_at: isoSeconds(client.createdAt),
  };
}

/**
 * The grants as `clients grant` checks them: each API exists and declares every scope named. The
 * issue path points at the offending grant, as a zod issue would.
 */
export async function checkedGrants(
  store: Store,
  grants: readonly z.infer<typeof clientGrantSchema>[],
  field = 'grants',
): Promise<{ api: string; scopes: string[] }[]> {
  const errors: { path: string; message: string }[] = [];
  const checked: { api: string; scopes: string[] }[] = [];
  const seen = new Set<string>();
  for (const [index, grant] of grants.entries()) {
    const api = await store.findApi(grant.api);
    if (!api) {
      errors.push({ path: `/${field}/${index}/api`, message: `no API "${grant.api}"` });
      continue;
    }
    if (seen.has(api.identifier)) errors.push({ path: `/${field}/${index}/api`, message: `API ${api.identifier} is granted twice` });
    seen.add(api.identifier);
    const scopes = [...new Set(grant.scopes)];
    errors.push(...scopeIssues(api, scopes, `/${field}/${index}/scopes`));
    checked.push({ api: api.identifier, scopes });
  }
  if (errors.length > 0) throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', errors);
  return checked;
}

/** The issues of `scopes` granted for `api`, as `clients grant` checks them: valid names the API declares. */
export function scopeIssues(api: ApiRecord, scopes: readonly string[], path: string): { path: string; message: string }[] {
  const malformed = scopeNameIssues(scopes, path);
  const undeclared = scopes.flatMap((scope, at) =>
    malformed.some((m) => m.path === `${path}/${at}`) || api.scopes.includes(scope)
      ? []
      : [{ path: `${path}/${at}`, message: `API ${api.identifier} declares no scope ${scope}` }],
  );
  return [...malformed, ...undeclared].sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
}

/** The scopes that are not valid scope names, each with its path. */
export function scopeNameIssues(scopes: readonly string[], path: string): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  for (const [at, scope] of scopes.entries()) {
    try {
      validScopeName(scope);
    } catch (err) {
      issues.push({ path: `${path}/${at}`, message: (err as Error).message });
    }
  }
  return issues;
}
