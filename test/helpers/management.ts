/**
 * Callers of the management API in tests: a machine client granted scopes of the built-in API
 * `{issuer}/api/v1`, and its client_credentials token, made the way an operator would (`clients
 * add --confidential --grant-type client_credentials`, `clients grant`), then asked of /oauth/token.
 */
import type { Store } from '../../src/store/store.js';
import { addClient, type TestApp } from './app.js';

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

/** Every scope of the built-in API, read then write, for tests that need them all. */
export const allManagementScopes = ['users', 'clients', 'apis', 'roles', 'connectors', 'sessions', 'keys', 'audit-events'].flatMap((r) => [
  `read:${r}`,
  `write:${r}`,
]);

/**
 * A caller of the management API through app.inject whose every answer is checked against the
 * OpenAPI document the server serves (helpers/openapi_answers.ts). the harness makes a machine client
 * granted `scopes` and fetches the document; `call` sends as that client unless `as` names another
 * token; `tokenFor` makes another client with other scopes.
 */
/** What the harness needs of a server: an app, its store and its configuration (a testApp, or one of several instances on one database). */
export type ManagementServer = Pick<TestApp, 'app' | 'config'> & { store: Store };

export async function managementHarness(t: ManagementServer, scopes: string[] = allManagementScopes, clientId = 'robot') {
  const { OpenApiAnswers } = await import('./openapi_answers.js');
  async function tokenFor(id: string, wanted: string[]): Promise<string> {
    const secret = await addManagementClient(t.store, t.config.issuer, id, wanted);
    const res = await t.app.inject({ method: 'POST', url: '/oauth/token', ...managementTokenRequest(t.config.issuer, id, secret, wanted) });
    if (res.statusCode !== 200) throw new Error(`token for ${id}: ${res.statusCode} ${res.body}`);
    return res.json<{ access_token: string }>().access_token;
  }
  const token = await tokenFor(clientId, scopes);
  const doc = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  if (doc.statusCode !== 200) throw new Error(`openapi.json: ${doc.statusCode}`);
  const answers = new OpenApiAnswers(doc.json());
  async function call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    options: { body?: unknown; headers?: Record<string, string>; as?: string } = {},
  ) {
    const headers: Record<string, string> = { authorization: `Bearer ${options.as ?? token}`, ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await t.app.inject({ method, url, headers, ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }) });
    answers.check({ method, url, statusCode: res.statusCode, headers: res.headers, body: res.body });
    return res;
  }
  return { token, tokenFor, call, answers };
}
