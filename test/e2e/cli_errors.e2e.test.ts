/**
 * What a person reads when `latchkey login` cannot work, with the real executable against a real
 * server (or a real socket that is not one): a sentence naming what to change, never a library's
 * own words.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runCli, startServerProcess, type ServerProcess } from '../helpers/process.js';

let dir: string;
let server: ServerProcess;
let cliEnv: Record<string, string>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-cli-errors-'));
  server = await startServerProcess({ LATCHKEY_DB: join(dir, 'server.db') });
  cliEnv = { HOME: join(dir, 'home') };
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('latchkey login explains what went wrong', () => {
  it('a client the server does not know: names --client-id, not the WWW-Authenticate challenge', async () => {
    const res = await runCli(['login', '--device', '--issuer', server.base, '--client-id', 'latchkey-clj'], cliEnv);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `latchkey: could not start the device sign-in: the client "latchkey-clj" is not known to ${server.base}, or may not sign in this way: check --client-id (the built-in one is latchkey-cli)\n`,
    );
  });

  it('localhost for a server whose issuer is 127.0.0.1: names the issuer the server really has', async () => {
    const port = new URL(server.base).port;
    const res = await runCli(['login', '--device', '--issuer', `http://localhost:${port}`], cliEnv);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`latchkey: the server at http://localhost:${port} says its issuer is ${server.base}; use --issuer ${server.base}\n`);
  });

  it('nothing listening: connection refused, is the server running?', async () => {
    const port = await freePort();
    const res = await runCli(['login', '--device', '--issuer', `http://127.0.0.1:${port}`], cliEnv);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`latchkey: nothing is listening at http://127.0.0.1:${port} (connection refused): is the server running, and is --issuer right?\n`);
  });

  it('an address with no discovery document (404): check --issuer', async () => {
    const res = await runCli(['login', '--device', '--issuer', `${server.base}/tenant`], cliEnv);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(
      `latchkey: ${server.base}/tenant is not the address of an OpenID provider (no ${server.base}/tenant/.well-known/openid-configuration, HTTP 404): check --issuer\n`,
    );
  });

  it('https to a server that speaks http: does not speak HTTPS on that port', async () => {
    const https = server.base.replace('http:', 'https:');
    const res = await runCli(['login', '--device', '--issuer', https], cliEnv);
    expect(res.code).toBe(1);
    expect(res.stderr).toBe(`latchkey: ${https} does not speak HTTPS on that port: check --issuer (http:// rather than https://, or another port)\n`);
  });

  it('a web page instead of an identity provider (a proxy, a portal): not JSON', async () => {
    const page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<html>Sign in to the portal</html>'));
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
      const res = await runCli(['login', '--device', '--issuer', issuer], cliEnv);
      expect(res.code).toBe(1);
      expect(res.stderr).toBe(
        `latchkey: the server at ${issuer} answered with text/html instead of JSON: is --issuer the address of the identity provider (not of a web page or a proxy's login)?\n`,
      );
    } finally {
      page.close();
    }
  });
});
