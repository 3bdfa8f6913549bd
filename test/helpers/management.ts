/**
 * Callers of the management API in tests: a machine client granted scopes of the built-in API
 * `{issuer}/api/v1`, and its client_credentials token, made the way an operator would (`clients
 * add --confidential --grant-type client_credentials`, `clients grant`), then asked of /oauth/token.
 */
import type { Store } from '../../src/store/store.js';
import { addClient } from './app.js';

export const managementScopes = ['read:clients', 'write:clients', 'read:apis', 'write:apis'];

/** The built-in API, declared here when this build does not make it at start. */
export async function ensureManagementApi(store: Store, issuer: string): Promise<string> {
  const identifier = `${issuer}/api/v1`;
  const api = await store.findApi(identifier);
  if (!api)
    await store.createApi({
      identifier,
      name: 'Latchkey management API',
      createdAt: 1_800_000_000,
      introspectionClients: [],
      scopes: managementScopes,
      managedBy: undefined,
    });
  else {
    const missing = managementScopes.filter((s) => !api.scopes.includes(s));
    if (missing.length > 0) await store.updateApi({ ...api, scopes: [...api.scopes, ...missing] });
  }
  return identifier;
}

/** A machine client granted `scopes` of the management API, with its secret. */
export async function addManagementClient(store: Store, issuer: string, clientId: string, scopes: string[]): Promise<string> {
  const api = await ensureManagementApi(store, issuer);
  const { secret } = await addClient(store, clientId, { confidential: true, grantTypes: ['client_credentials'] });
  await store.saveClientGrant({ clientId, api, scopes, createdAt: 1_800_000_000 });
  return secret!;
}

/** The token request of client_credentials (RFC 6749 §4.4) for the management API, as form fields and headers. */
export function managementTokenRequest(issuer: string, clientId: string, secret: string, scopes: string[]) {
  return {
    payload: new URLSearchParams({ grant_type: 'client_credentials', resource: `${issuer}/api/v1`, scope: scopes.join(' ') }).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
  };
}
