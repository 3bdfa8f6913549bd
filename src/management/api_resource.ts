/**
 * The `apis` resource (the APIs tokens are issued for): bodies use the configuration file's field
 * names and rules (config_file/schema.ts), as `apis add` and `apis update` check them.
 */
import { z } from 'zod';
import { apiSchema } from '../config_file/schema.js';
import { isConfidential } from '../oauth/client_type.js';
import { validClientId } from '../directory/validation.js';
import type { ApiRecord, Store } from '../store/store.js';
import { Problem } from './problem.js';
import { isoSeconds } from './user_view.js';

const fields = apiSchema.shape;

export const apiCreateSchema = apiSchema;

export const apiPatchSchema = z.strictObject({
  name: fields.name,
  scopes: fields.scopes.unwrap().optional(),
  introspection_clients: fields.introspection_clients.unwrap().optional(),
});

/** The identifier is a URL, so it travels URL-encoded in the path: /apis/https%3A%2F%2Fapi.example. */
export const apiIdentifierParamsSchema = z.strictObject({ identifier: z.string().min(1).max(2048) });

export const apiViewSchema = z.object({
  identifier: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  introspection_clients: z.array(z.string()),
  managed_by: z.string().optional(),
  created_at: z.string(),
});
export type ApiView = z.infer<typeof apiViewSchema>;

export function apiView(api: ApiRecord): ApiView {
  return {
    identifier: api.identifier,
    name: api.name,
    scopes: api.scopes,
    introspection_clients: api.introspectionClients,
    ...(api.managedBy === undefined ? {} : { managed_by: api.managedBy }),
    created_at: isoSeconds(api.createdAt),
  };
}

/** As `apis add --introspection-client`: each client exists and is confidential (RFC 7662 §4: only they introspect). */
export async function checkedIntrospectionClients(store: Store, values: readonly string[]): Promise<string[]> {
  const errors: { path: string; message: string }[] = [];
  const ids: string[] = [];
  for (const [index, value] of values.entries()) {
    let id: string;
    try {
      id = validClientId(value);
    } catch (err) {
      errors.push({ path: `/introspection_clients/${index}`, message: (err as Error).message });
      continue;
    }
    const client = await store.findClient(id);
    if (!client) errors.push({ path: `/introspection_clients/${index}`, message: `no client "${id}"` });
    else if (!isConfidential(client))
      errors.push({ path: `/introspection_clients/${index}`, message: `client "${id}" is public; only confidential clients can introspect tokens` });
    else if (!ids.includes(id)) ids.push(id);
  }
  if (errors.length > 0) throw new Problem(400, 'invalid-input', 'The request body is not valid: see errors.', errors);
  return ids;
}
