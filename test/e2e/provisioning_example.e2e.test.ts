/**
 * docs/examples/provision.sh, the provisioning example of docs/management-api.md, run as a CI job
 * runs it against a real server process: it registers a preview's client with a grant and prints
 * its secret once, updates it with If-Match on a re-run without showing the secret again, removes
 * it at tear-down, and never puts a secret or a token on curl's command line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { executable, runCli, startServerProcess, type CliResult, type ServerProcess } from '../helpers/process.js';

const script = fileURLToPath(new URL('../../docs/examples/provision.sh', import.meta.url));
const reports = 'https://reports.example.com';

let dir: string;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let provisionerSecret: string;
let readerSecret: string;

async function cli(args: string[]): Promise<string> {
  const result = await runCli(args, serverEnv);
  expect(result.code, `latchkey ${args.join(' ')}: ${result.stderr}`).toBe(0);
  return result.stdout;
}

async function machineClient(clientId: string, scopes: string[]): Promise<string> {
  const added = await cli(['clients', 'add', clientId, '--confidential', '--grant-type', 'client_credentials']);
  await cli(['clients', 'grant', clientId, `${server.base}/api/v1`, ...scopes.flatMap((s) => ['--scope', s])]);
  return /client_secret \(shown only once\): (\S+)/.exec(added)![1]!;
}

/** The example as a CI job runs it: sh, its environment from the CI's secret store. */
function provision(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', [script, ...args], {
      env: {
        PATH: `${join(dir, 'shim')}:${process.env.PATH ?? ''}`,
        LATCHKEY_ISSUER: server.base,
        PROVISIONER_ID: 'ci',
        PROVISIONER_SECRET: provisionerSecret,
        PREVIEW_API: reports,
        PREVIEW_SCOPES: 'read:reports',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const listedClients = z.array(z.looseObject({ client_id: z.string(), redirect_uris: z.array(z.string()), api_grants: z.array(z.unknown()) }));

async function registered(clientId: string) {
  return listedClients.parse(JSON.parse(await cli(['clients', 'list', '--json']))).find((c) => c.client_id === clientId);
}

/** Whether `secret` authenticates `clientId` at the token endpoint (RFC 6749 §2.3.1): 401 when it does not. */
async function authenticates(clientId: string, secret: string): Promise<boolean> {
  const answer = await fetch(`${server.base}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  return answer.status !== 401;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'latchkey-provision-'));
  mkdirSync(join(dir, 'shim'));
  const log = join(dir, 'curl-arguments');
  writeFileSync(log, '');
  // The shim records each command line, and runs once, just before a PATCH goes out, whatever
  // command a test left in `before-patch` (another writer changing the client in between).
  const beforePatch = join(dir, 'before-patch');
  writeFileSync(
    join(dir, 'shim', 'curl'),
    [
      '#!/bin/sh',
      `printf '%s\\n' "$*" >> '${log}'`,
      `case "$*" in *'-X PATCH'*) if [ -f '${beforePatch}' ]; then sh '${beforePatch}' >&2; rm '${beforePatch}'; fi ;; esac`,
      `PATH=$(printf '%s' "$PATH" | sed 's|^[^:]*:||') exec curl "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(join(dir, 'shim', 'curl'), 0o755);
  serverEnv = { LATCHKEY_DB: join(dir, 'server.db') };
  server = await startServerProcess(serverEnv);
  serverEnv = { ...serverEnv, LATCHKEY_ISSUER: server.base };
  provisionerSecret = await machineClient('ci', ['read:clients', 'write:clients']);
  readerSecret = await machineClient('auditor', ['read:clients']);
  await cli(['apis', 'add', reports, '--name', 'Reports', '--scope', 'read:reports', '--scope', 'write:reports']);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/examples/provision.sh', () => {
  it('registers a preview client with its redirect URI and grant, prints its secret once, updates it with If-Match on a re-run, and removes it', async () => {
    const up = await provision(['up', 'preview-42', 'https://pr-42.preview.example.com/callback']);
    expect(up.code, up.stderr).toBe(0);
    const [, secret] = /^client_id=preview-42\nclient_secret=(\S+)\n$/.exec(up.stdout) ?? [];
    expect(secret).toBeDefined();
    expect(await authenticates('preview-42', secret!)).toBe(true);
    expect(await registered('preview-42')).toMatchObject({
      redirect_uris: ['https://pr-42.preview.example.com/callback'],
      api_grants: [{ api: reports, scopes: ['read:reports'] }],
    });

    // A re-run (a new push to the branch) updates the client in place; the secret stays and is not shown again.
    const again = await provision(['up', 'preview-42', 'https://pr-42b.preview.example.com/callback'], { PREVIEW_SCOPES: 'read:reports write:reports' });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('client_id=preview-42\n');
    expect(again.stderr).toContain('not shown again');
    expect(await registered('preview-42')).toMatchObject({
      redirect_uris: ['https://pr-42b.preview.example.com/callback'],
      api_grants: [{ api: reports, scopes: ['read:reports', 'write:reports'] }],
    });
    expect(await authenticates('preview-42', secret!)).toBe(true);
    expect(`${up.stdout}${up.stderr}${again.stdout}${again.stderr}`.split(secret!)).toHaveLength(2);

    const down = await provision(['down', 'preview-42']);
    expect(down.code, down.stderr).toBe(0);
    expect(await registered('preview-42')).toBeUndefined();
    const downAgain = await provision(['down', 'preview-42']);
    expect(downAgain.code, downAgain.stderr).toBe(0);
    expect(downAgain.stderr).toContain('already removed');

    // Neither the job's secret, nor the preview's, nor an access token was ever an argument of curl.
    // (A shim in front of the real curl writes every command line it was started with.)
    const curlArguments = readFileSync(join(dir, 'curl-arguments'), 'utf8');
    expect(curlArguments).toMatch(/-X PATCH .*-H If-Match: W\/"/);
    expect(curlArguments).toMatch(/-X DELETE .*-H If-Match: W\/"/);
    expect(curlArguments).not.toContain(provisionerSecret);
    expect(curlArguments).not.toContain(secret!);
    expect(curlArguments).not.toMatch(/Bearer|Basic|eyJ/);
  });

  it('on a re-run that meets a change made since its read (412), reads the client again and applies its update', async () => {
    const up = await provision(['up', 'preview-45', 'https://pr-45.preview.example.com/callback']);
    expect(up.code, up.stderr).toBe(0);
    const grant = [process.execPath, executable, 'clients', 'grant', 'preview-45', reports, '--scope', 'write:reports'].map((a) => `'${a}'`).join(' ');
    writeFileSync(join(dir, 'before-patch'), `LATCHKEY_DB='${serverEnv.LATCHKEY_DB!}' ${grant}\n`);
    const patchesSent = () =>
      readFileSync(join(dir, 'curl-arguments'), 'utf8')
        .split('\n')
        .filter((line) => line.includes('-X PATCH')).length;
    const before = patchesSent();
    const again = await provision(['up', 'preview-45', 'https://pr-45b.preview.example.com/callback']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('client_id=preview-45\n');
    expect(existsSync(join(dir, 'before-patch'))).toBe(false);
    // The first PATCH was refused (412) and a second, with the fresh ETag, applied the job's values.
    expect(patchesSent() - before).toBe(2);
    expect(await registered('preview-45')).toMatchObject({
      redirect_uris: ['https://pr-45b.preview.example.com/callback'],
      api_grants: [{ api: reports, scopes: ['read:reports'] }],
    });
  });

  it('stops with the server’s refusal, changing nothing, when the job’s client lacks write:clients or the grant names an unknown API', async () => {
    const unscoped = await provision(['up', 'preview-43', 'https://pr-43.preview.example.com/callback'], {
      PROVISIONER_ID: 'auditor',
      PROVISIONER_SECRET: readerSecret,
    });
    expect(unscoped.code).toBe(1);
    expect(unscoped.stdout).toBe('');
    expect(unscoped.stderr).toContain('the token request answered 400: A requested scope was not granted');
    const unknownApi = await provision(['up', 'preview-43', 'https://pr-43.preview.example.com/callback'], { PREVIEW_API: 'https://nowhere.example.com' });
    expect(unknownApi.code).toBe(1);
    expect(unknownApi.stdout).toBe('');
    expect(unknownApi.stderr).toContain('POST /clients answered 400: {');
    expect(unknownApi.stderr).toContain('"path":"/grants/0/api"');
    expect(await registered('preview-43')).toBeUndefined();
  });

  it('refuses bad usage and a preview id that would need escaping before calling the server', async () => {
    expect((await provision(['up', 'preview-44'])).code).toBe(2);
    const odd = await provision(['up', 'preview/../44', 'https://pr-44.preview.example.com/callback']);
    expect(odd.code).toBe(1);
    expect(odd.stderr).toContain('PREVIEW_ID may hold');
    const plain = await provision(['up', 'preview-44', 'http://pr-44.preview.example.com/callback']);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('must be https');
    expect(await registered('preview-44')).toBeUndefined();
  });
});
