/**
 * Each failure openid-client and fetch really raise — produced here by real requests to real
 * sockets, not by hand-made error objects — and the sentence the CLI makes of it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { explainClientError, oauthErrorCode } from '../../src/cli/client/client_errors.js';
import { freePort } from '../helpers/process.js';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const http = (handler: RequestListener) => listen(createServer(handler));
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  ((_req, res) => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))) as RequestListener;

/** The error openid-client's discovery raises for `issuer`. */
async function discoveryError(issuer: string, timeout = 5): Promise<unknown> {
  try {
    await oidc.discovery(new URL(issuer), 'latchkey-cli', undefined, oidc.None(), {
      execute: issuer.startsWith('http:') ? [oidc.allowInsecureRequests] : [],
      timeout,
    });
  } catch (err) {
    return err;
  }
  throw new Error('discovery succeeded');
}

/** A provider whose discovery works and whose device endpoint answers with `device`. */
async function deviceEndpointError(device: RequestListener): Promise<{ err: unknown; issuer: string }> {
  let base = '';
  base = await http((req, res) => {
    const answer =
      req.url === '/.well-known/openid-configuration'
        ? json(200, { issuer: base, token_endpoint: `${base}/token`, device_authorization_endpoint: `${base}/device` })
        : device;
    answer(req, res);
  });
  const config = await oidc.discovery(new URL(base), 'nope', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
  try {
    await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
  } catch (err) {
    return { err, issuer: base };
  }
  throw new Error('device authorization succeeded');
}

describe('explainClientError', () => {
  it('an unknown client (401 with a bare Basic challenge): names the client and --client-id', async () => {
    const { err, issuer } = await deviceEndpointError(
      json(401, { error: 'invalid_client', error_description: 'Client authentication failed.' }, { 'www-authenticate': 'Basic realm="latchkey"' }),
    );
    expect((err as Error).message).toBe('server responded with a challenge in the WWW-Authenticate HTTP Header');
    expect(oauthErrorCode(err)).toBe('invalid_client');
    expect(explainClientError(err, { issuer, clientId: 'nope' })).toBe(
      `the client "nope" is not known to ${issuer}, or may not sign in this way: check --client-id (the built-in one is latchkey-cli)`,
    );
  });

  it('an unknown client in a JSON body (no challenge): the same sentence', async () => {
    const { err, issuer } = await deviceEndpointError(json(400, { error: 'invalid_client' }));
    expect(explainClientError(err, { issuer, clientId: 'nope' })).toMatch(/^the client "nope" is not known to .*: check --client-id/);
  });

  it('a refused scope or audience: names --scope or --audience; another code is shown with its description', async () => {
    const scope = await deviceEndpointError(json(400, { error: 'invalid_scope', error_description: 'unknown scope photos' }));
    expect(explainClientError(scope.err, { issuer: scope.issuer, clientId: 'c' })).toBe(
      'the identity provider refused the scope (unknown scope photos): check --scope',
    );
    const target = await deviceEndpointError(json(400, { error: 'invalid_target' }));
    expect(explainClientError(target.err, { issuer: target.issuer, clientId: 'c' })).toBe('the identity provider knows no such API: check --audience');
    const other = await deviceEndpointError(json(400, { error: 'slow_down', error_description: 'wait \u001b[31m' }));
    expect(explainClientError(other.err, { issuer: other.issuer, clientId: 'c' })).toBe('slow_down: wait \\x1b[31m');
  });

  it('an issuer mismatch: names the issuer the server really has', async () => {
    const base = await http(json(200, { issuer: 'http://localhost:3000' }));
    const err = await discoveryError(base);
    expect(explainClientError(err, { issuer: base, clientId: 'c' })).toBe(
      `the server at ${base} says its issuer is http://localhost:3000; use --issuer http://localhost:3000`,
    );
  });

  it('connection refused', async () => {
    const issuer = `http://127.0.0.1:${await freePort()}`;
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      `nothing is listening at ${issuer} (connection refused): is the server running, and is --issuer right?`,
    );
  });

  it('a host name that does not resolve (DNS)', async () => {
    const issuer = 'http://idp.nowhere.invalid';
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      "the host name idp.nowhere.invalid cannot be found (DNS): check --issuer, and this machine's network",
    );
  });

  it('no answer in time', async () => {
    const issuer = await http(() => undefined); // accepts, never answers
    expect(explainClientError(await discoveryError(issuer, 1), { issuer, clientId: 'c' })).toBe(
      `${issuer} did not answer in time: check that the server is running and reachable from here, and --issuer`,
    );
  });

  it('https to a port that speaks http', async () => {
    const base = await http(json(200, {}));
    const issuer = base.replace('http:', 'https:');
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      `${issuer} does not speak HTTPS on that port: check --issuer (http:// rather than https://, or another port)`,
    );
  });

  it('a TLS certificate this machine does not trust (self-signed)', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'latchkey-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(folder, 'key.pem'),
          '-out',
          join(folder, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      const server = createTlsServer({ key: readFileSync(join(folder, 'key.pem')), cert: readFileSync(join(folder, 'cert.pem')) }, json(200, {}));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const issuer = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
      expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
        `the TLS certificate of ${issuer} is not trusted by this machine (DEPTH_ZERO_SELF_SIGNED_CERT): if your organisation signs its own certificates, point NODE_EXTRA_CA_CERTS at its CA certificate file`,
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('a web page instead of JSON', async () => {
    const issuer = await http((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'));
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      `the server at ${issuer} answered with text/html instead of JSON: is --issuer the address of the identity provider (not of a web page or a proxy's login)?`,
    );
  });

  it('malformed JSON', async () => {
    const issuer = await http((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"issuer": '));
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      `the server at ${issuer} answered with malformed JSON: is --issuer the address of the identity provider?`,
    );
  });

  it('no discovery document (404), and a failing server (5xx)', async () => {
    const issuer = await http((_req, res) => res.writeHead(404).end());
    expect(explainClientError(await discoveryError(issuer), { issuer, clientId: 'c' })).toBe(
      `${issuer} is not the address of an OpenID provider (no ${issuer}/.well-known/openid-configuration, HTTP 404): check --issuer`,
    );
    const failing = await http((_req, res) => res.writeHead(502).end());
    expect(explainClientError(await discoveryError(failing), { issuer: failing, clientId: 'c' })).toBe(
      `the server at ${failing} is failing (HTTP 502): try again later, or tell its operator`,
    );
  });

  it('anything else: its own message, made safe for the terminal', () => {
    expect(explainClientError(new Error('odd \u001b[2J thing'), { issuer: 'http://x', clientId: 'c' })).toBe('odd \\x1b[2J thing');
  });
});
