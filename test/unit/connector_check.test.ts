/**
 * The connector check (connectors/connector_check.ts) as a server-side request to an address an
 * administrator typed: no redirect is followed (to another host or at all), each request has the
 * deadline, an answer is read up to a bound, and no secret reaches a cause. Real loopback sockets.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkConnector } from '../../src/connectors/connector_check.js';
import { oidcConfigSchema } from '../../src/connectors/connector_config.js';
import { startFakeOidcProvider, startSilentServer } from '../helpers/upstreams.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that answers every request with `handler`, counting the requests it got. */
async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ base: string; requests: () => number }> {
  let count = 0;
  const server = createServer((request, response) => {
    count++;
    handler!(request, response);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => count };
}

const options = { timeoutSeconds: 1, redirectUri: 'http://latchkey.test/connectors/acme/callback' };
const oidc = (issuer: string, clientId = 'client') => ({
  type: 'oidc' as const,
  config: oidcConfigSchema.parse({ issuer, clientId }),
  secret: 'the-client-secret',
});

describe('connector check: what it asks of an upstream', () => {
  it('follows no redirect: a discovery document that redirects to another host fails, and that host is never asked', async () => {
    const elsewhere = await serve((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const redirecting = await serve((_request, response) => response.writeHead(302, { location: `${elsewhere.base}/.well-known/openid-configuration` }).end());
    const result = await checkConnector(oidc(redirecting.base), options);
    expect(result.ok).toBe(false);
    expect(result.cause).toBe(
      `${redirecting.base}/.well-known/openid-configuration answered 302, a redirect to ${elsewhere.base}/.well-known/openid-configuration, which is not followed: use the address the provider documents`,
    );
    expect(elsewhere.requests()).toBe(0);
  });

  it('gives up at the deadline on an upstream that never answers, saying so', async () => {
    const silent = await startSilentServer();
    try {
      const started = Date.now();
      const result = await checkConnector(oidc(silent.base), options);
      expect(Date.now() - started).toBeLessThan(4000);
      expect(result).toMatchObject({ ok: false, failure: 'unreachable', cause: `no answer from ${silent.base}/.well-known/openid-configuration within 1 s` });
    } finally {
      await silent.close();
    }
  });

  it('reads an answer up to 256 KiB, not an endless one', async () => {
    const flooding = await serve((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', pump);
      };
      pump();
    });
    const result = await checkConnector(oidc(flooding.base), options);
    expect(result).toMatchObject({ ok: false, cause: `${flooding.base}/.well-known/openid-configuration answered more than 256 KiB` });
  });

  it('names the issuer an upstream really has, without its control characters, and never the secret', async () => {
    const idp = await startFakeOidcProvider();
    try {
      idp.behaviour.discoveryIssuer = 'http://localhost:1/\u001b[2Jrealm';
      const result = await checkConnector({ ...oidc(idp.base, idp.clientId), secret: idp.clientSecret }, options);
      expect(result.cause).toBe(
        `the issuer's discovery document names the issuer http://localhost:1/?[2Jrealm, not ${idp.base}: use --issuer http://localhost:1/?[2Jrealm`,
      );
      idp.behaviour.discoveryIssuer = undefined;
      const working = await checkConnector({ ...oidc(idp.base, idp.clientId), secret: idp.clientSecret }, options);
      expect(working.ok).toBe(true);
      expect(working.checks.map((c) => [c.name, c.outcome])).toEqual([
        ['discovery document', 'passed'],
        ['signing keys (JWKS)', 'passed'],
        ['client credentials', 'passed'],
        ['redirect URI', 'not_checked'],
      ]);
      expect(JSON.stringify([result, working])).not.toContain(idp.clientSecret);
    } finally {
      await idp.close();
    }
  });
});
