/**
 * The management API as a program outside the project meets it: a client made by openapi-fetch
 * from the types openapi-typescript generated of the OpenAPI document (test/generated/, `npm run
 * api:client`), with no type written by hand and no cast of an answer, calls a real server process
 * over a real socket. The compiler checks every path, parameter and field name against the
 * document; each answer is also checked against the document the server serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { z } from 'zod';
import type { paths } from '../generated/management_api.js';
import { OpenApiAnswers } from '../helpers/openapi_answers.js';
import { runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let answers: OpenApiAnswers;

async function cli(args: string[]): Promise<string> {
  const result = await runCli(args, serverEnv);
  expect(result.code, `latchkey ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

/** A machine client granted `scopes` of the built-in API, registered as an operator would. */
async function machineClient(clientId: string, scopes: string[]): Promise<string> {
  const added = await cli(['clients', 'add', clientId, '--confidential', '--grant-type', 'client_credentials']);
  await cli(['clients', 'grant', clientId, `${server.base}/api/v1`, ...scopes.flatMap((s) => ['--scope', s])]);
  return /client_secret \(shown only once\): (\S+)/.exec(added)![1]!;
}

/** A token for {issuer}/api/v1 by client_credentials (RFC 6749 §4.4, the resource of RFC 8707). */
async function tokenFor(clientId: string, secret: string, scopes: string[]): Promise<string> {
  const answer = await fetch(`${server.base}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource: `${server.base}/api/v1`, scope: scopes.join(' ') }),
  });
  expect(answer.status).toBe(200);
  return z.object({ access_token: z.string() }).parse(await answer.json()).access_token;
}

/** Every answer the generated client receives is checked against the served document. */
const checkedAgainstTheDocument: Middleware = {
  async onResponse({ request, response }) {
    const body = await response.clone().text();
    answers.check({
      method: request.method,
      url: request.url,
      statusCode: response.status,
      headers: { 'content-type': response.headers.get('content-type') },
      body,
    });
  },
};

function generatedClient(accessToken: string): Client<paths> {
  const client = createClient<paths>({ baseUrl: `${server.base}/api/v1`, headers: { authorization: `Bearer ${accessToken}` } });
  client.use(checkedAgainstTheDocument);
  return client;
}

let writer: Client<paths>;
let reader: Client<paths>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-generated-client-'));
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  server = await startServerProcess(serverEnv);
  serverEnv = { ...serverEnv, LATCHKEY_ISSUER: server.base };
  answers = new OpenApiAnswers(z.record(z.string(), z.unknown()).parse(await (await fetch(`${server.base}/api/v1/openapi.json`)).json()));
  const writeScopes = ['read:clients', 'write:clients', 'read:apis', 'write:apis'];
  writer = generatedClient(await tokenFor('provisioner', await machineClient('provisioner', writeScopes), writeScopes));
  reader = generatedClient(await tokenFor('auditor', await machineClient('auditor', ['read:clients']), ['read:clients']));
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a client generated from the OpenAPI document', () => {
  it('lists, creates, reads, changes with If-Match, rotates the secret of and deletes a client', async () => {
    const created = await writer.POST('/clients', {
      body: { client_id: 'preview-7', name: 'Preview 7', confidential: true, redirect_uris: ['https://preview-7.example.com/callback'] },
    });
    expect(created.response.status).toBe(201);
    expect(created.data?.client_id).toBe('preview-7');
    const firstSecret = created.data?.client_secret;
    expect(firstSecret).toMatch(/\S{20,}/);

    const listed = await writer.GET('/clients', { params: { query: { limit: 100 } } });
    expect(listed.data?.data.map((c) => c.client_id)).toContain('preview-7');
    expect(listed.data?.data.some((c) => 'client_secret' in c)).toBe(false);

    const read = await writer.GET('/clients/{client_id}', { params: { path: { client_id: 'preview-7' } } });
    expect(read.data?.redirect_uris).toEqual(['https://preview-7.example.com/callback']);
    const etag = read.response.headers.get('etag') ?? '';
    expect(etag).toMatch(/^W\/"/);

    const changed = await writer.PATCH('/clients/{client_id}', {
      params: { path: { client_id: 'preview-7' }, header: { 'If-Match': etag } },
      body: { redirect_uris: ['https://preview-7.example.com/callback', 'https://preview-7b.example.com/callback'] },
    });
    expect(changed.response.status).toBe(200);
    expect(changed.data?.redirect_uris).toHaveLength(2);
    // The ETag read before the change is stale now: a second writer with it is refused, with a problem body.
    const stale = await writer.PATCH('/clients/{client_id}', {
      params: { path: { client_id: 'preview-7' }, header: { 'If-Match': etag } },
      body: { name: 'Lost' },
    });
    expect(stale.response.status).toBe(412);
    expect(stale.error?.status).toBe(412);
    expect(stale.error?.type).toMatch(/precondition-failed$/);

    const rotated = await writer.POST('/clients/{client_id}/rotate-secret', { params: { path: { client_id: 'preview-7' } }, body: { keep_old_for: 0 } });
    expect(rotated.response.status).toBe(200);
    expect(rotated.data?.client_secret).toMatch(/\S{20,}/);
    expect(rotated.data?.client_secret).not.toBe(firstSecret);

    const current = await writer.GET('/clients/{client_id}', { params: { path: { client_id: 'preview-7' } } });
    expect(current.data?.name).toBe('Preview 7');
    const removed = await writer.DELETE('/clients/{client_id}', {
      params: { path: { client_id: 'preview-7' }, header: { 'If-Match': current.response.headers.get('etag') ?? '' } },
    });
    expect(removed.response.status).toBe(204);
    const gone = await writer.GET('/clients/{client_id}', { params: { path: { client_id: 'preview-7' } } });
    expect(gone.response.status).toBe(404);
    expect(gone.error?.detail).toContain('preview-7');
  });

  it('declares, updates and removes an API, its identifier a URL in the path', async () => {
    const identifier = 'https://reports.example.com';
    const declared = await writer.POST('/apis', { body: { identifier, name: 'Reports', scopes: ['read:reports'] } });
    expect(declared.response.status).toBe(201);
    expect(declared.data?.scopes).toEqual(['read:reports']);

    const listed = await writer.GET('/apis', {});
    expect(listed.data?.data.map((a) => a.identifier)).toContain(identifier);

    const read = await writer.GET('/apis/{identifier}', { params: { path: { identifier } } });
    expect(read.data?.name).toBe('Reports');
    const updated = await writer.PATCH('/apis/{identifier}', {
      params: { path: { identifier }, header: { 'If-Match': read.response.headers.get('etag') ?? '' } },
      body: { scopes: ['read:reports', 'write:reports'] },
    });
    expect(updated.response.status).toBe(200);
    expect(updated.data?.scopes).toEqual(['read:reports', 'write:reports']);

    const removed = await writer.DELETE('/apis/{identifier}', { params: { path: { identifier } } });
    expect(removed.response.status).toBe(204);
    const gone = await writer.DELETE('/apis/{identifier}', { params: { path: { identifier } } });
    expect(gone.response.status).toBe(404);
    expect(gone.error?.status).toBe(404);
  });

  it('reads a refusal for want of a scope as a typed problem, and nothing is changed', async () => {
    const refused = await reader.POST('/clients', { body: { client_id: 'not-allowed' } });
    expect(refused.response.status).toBe(403);
    expect(refused.error?.status).toBe(403);
    expect(refused.error?.detail).toContain('write:clients');
    const missing = await reader.GET('/clients/{client_id}', { params: { path: { client_id: 'not-allowed' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.title.length).toBeGreaterThan(0);
    expect(answers.checked).toBeGreaterThan(0);
  });
});
