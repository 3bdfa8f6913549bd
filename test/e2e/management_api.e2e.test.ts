/**
 * The management API over a real socket, as an automation meets it: a machine client granted
 * write:clients on {issuer}/api/v1 gets a token with client_credentials, registers a client,
 * rotates its secret (the new one works at /oauth/token, the old one no longer does) and removes
 * it; a token without the scope gets 403. Every answer is checked against the served document.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from '../helpers/app.js';
import { addManagementClient, managementTokenRequest } from '../helpers/management.js';
import { OpenApiAnswers } from '../helpers/openapi_answers.js';

let t: TestApp;
let base: string;
let answers: OpenApiAnswers;

beforeAll(async () => {
  t = await testApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  answers = new OpenApiAnswers((await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Record<string, unknown>);
});
afterAll(() => t.close());

async function token(clientId: string, secret: string, scopes: string[]): Promise<Response> {
  const request = managementTokenRequest(t.config.issuer, clientId, secret, scopes);
  return fetch(`${base}/oauth/token`, { method: 'POST', headers: request.headers, body: request.payload });
}

async function call(method: string, path: string, accessToken: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${accessToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  answers.check({ method, url: path, statusCode: res.status, headers: { 'content-type': res.headers.get('content-type') ?? undefined }, body: text });
  return { status: res.status, json: text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>) };
}

it('a machine client with write:clients registers a client (audited as the actor), rotates its secret and removes it; one without the scope gets 403', async () => {
  const provisionerSecret = await addManagementClient(t.store, t.config.issuer, 'provisioner', ['write:clients']);
  const granted = await token('provisioner', provisionerSecret, ['write:clients']);
  expect(granted.status).toBe(200);
  const writer = ((await granted.json()) as { access_token: string }).access_token;

  const created = await call('POST', '/api/v1/clients', writer, { client_id: 'preview-42', confidential: true, grant_types: ['client_credentials'] });
  expect(created.status).toBe(201);
  const firstSecret = created.json!.client_secret as string;
  // The change is in the audit log with who made it (the machine client) and from where, never with the secret.
  await t.app.services.auditTrail.flush();
  const [event] = await t.store.listAuditEvents({ event: 'client.created', clientId: 'preview-42', limit: 10 });
  expect(event).toMatchObject({ actor: 'provisioner', ip: '127.0.0.1', details: { via: 'api', callerClientId: 'provisioner' } });
  expect(JSON.stringify(event)).not.toContain(firstSecret);

  const rotated = await call('POST', '/api/v1/clients/preview-42/rotate-secret', writer);
  expect(rotated.status).toBe(200);
  const secondSecret = rotated.json!.client_secret as string;
  // The new secret authenticates the client; the old one no longer does (RFC 6749 §2.3.1).
  const basic = (secret: string) => ({
    authorization: `Basic ${Buffer.from(`preview-42:${secret}`).toString('base64')}`,
    'content-type': 'application/x-www-form-urlencoded',
  });
  const withNew = await fetch(`${base}/oauth/token`, { method: 'POST', headers: basic(secondSecret), body: 'grant_type=client_credentials' });
  const withOld = await fetch(`${base}/oauth/token`, { method: 'POST', headers: basic(firstSecret), body: 'grant_type=client_credentials' });
  expect(withOld.status).toBe(401);
  expect(withNew.status).not.toBe(401);

  expect((await call('DELETE', '/api/v1/clients/preview-42', writer)).status).toBe(204);
  expect(await t.store.findClient('preview-42')).toBeUndefined();

  const readerSecret = await addManagementClient(t.store, t.config.issuer, 'auditor', ['read:clients']);
  const reader = ((await (await token('auditor', readerSecret, ['read:clients'])).json()) as { access_token: string }).access_token;
  const refused = await call('POST', '/api/v1/clients', reader, { client_id: 'not-allowed' });
  expect(refused.status).toBe(403);
  expect(await t.store.findClient('not-allowed')).toBeUndefined();
  expect(answers.checked).toBe(4);
});
