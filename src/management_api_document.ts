/**
 * The OpenAPI document of /api/v1 exactly as a server serves it, made without a network or a
 * database file: the app is built on an in-memory store and asked for /api/v1/openapi.json. The
 * reference page (api_reference.ts) and the generated client types are made from it, so both
 * describe every operation the routes register, not a copy of them.
 */
import { buildApp } from './app.js';
import { configFrom } from './config.js';
import { SqliteStore } from './store/sqlite/sqlite_store.js';

/** The issuer the generated files name (a reserved example domain, RFC 2606): the same on every machine. */
export const referenceIssuer = 'https://id.example.com';

export type OpenApiDocument = Record<string, unknown>;

export async function managementApiDocument(issuer = referenceIssuer): Promise<OpenApiDocument> {
  const config = configFrom({ LATCHKEY_ISSUER: issuer, LATCHKEY_DB: ':memory:' });
  const store = new SqliteStore({ path: ':memory:', now: 0 });
  try {
    const app = await buildApp({ config, store, logger: false });
    try {
      const answer = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      if (answer.statusCode !== 200) throw new Error(`GET /api/v1/openapi.json answered ${answer.statusCode}: ${answer.body}`);
      return answer.json<OpenApiDocument>();
    } finally {
      await app.close();
    }
  } finally {
    await store.close();
  }
}
