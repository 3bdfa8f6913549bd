/**
 * The credential helpers' readers and writers: git's key=value requests, docker's
 * server URL, kubectl's ExecCredential and KUBERNETES_EXEC_INFO, and the audience check.
 */
import { UnsecuredJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { CommandError } from '../../src/cli/command.js';
import { checkAudience, readInput, shellWord } from '../../src/cli/client/credential_helper.js';
import { answersFor, formatGitCredential, parseGitCredentialRequest } from '../../src/cli/client/credential_git.js';
import { answersForRegistry, dockerCredential, listedRegistryHost, parseDockerServerUrl, registryHost } from '../../src/cli/client/credential_docker.js';
import { execCredential, requestedApiVersion } from '../../src/cli/client/credential_kubectl.js';
import type { Profile } from '../../src/cli/client/credentials.js';

describe('git credential request', () => {
  it('reads key=value lines up to the blank line and ignores what follows it', () => {
    expect(parseGitCredentialRequest('protocol=https\nhost=git.example.com\npath=team/repo.git\n\nhost=evil.example\n')).toEqual({
      protocol: 'https',
      host: 'git.example.com',
      path: 'team/repo.git',
    });
  });

  it('reads to the end without a blank line, ignores unknown keys, array keys and lines without "="', () => {
    expect(
      parseGitCredentialRequest('capability[]=authtype\nprotocol=https\nwwwauth[]=Bearer realm="x"\nnonsense\n=value\nhost=h.example:8443\nusername=alice'),
    ).toEqual({
      protocol: 'https',
      host: 'h.example:8443',
      username: 'alice',
    });
  });

  it('keeps "=" inside a value and accepts CRLF line ends', () => {
    expect(parseGitCredentialRequest('protocol=https\r\nhost=a.example\r\npassword=a=b\r\n\r\n')).toEqual({
      protocol: 'https',
      host: 'a.example',
      password: 'a=b',
    });
  });

  it('url= stands for its parts and replaces earlier attributes; later ones still apply', () => {
    expect(parseGitCredentialRequest('host=old.example\npath=old\nurl=https://bob@git.example.com:8443/team/repo.git\n')).toEqual({
      protocol: 'https',
      host: 'git.example.com:8443',
      path: 'team/repo.git',
      username: 'bob',
    });
    expect(parseGitCredentialRequest('url=http://git.example.com\nprotocol=https\n')).toEqual({ protocol: 'https', host: 'git.example.com' });
    expect(() => parseGitCredentialRequest('url=not a url\n')).toThrow(CommandError);
  });
});

describe('which git requests get the token', () => {
  const https = { protocol: 'https', host: 'git.example.com' };
  it.each([
    ['https', https, [], true],
    ['HTTPS (protocol names are case-insensitive)', { ...https, protocol: 'HTTPS' }, [], true],
    ['plain http', { ...https, protocol: 'http' }, [], false],
    ['ssh', { ...https, protocol: 'ssh' }, [], false],
    ['no protocol', { host: 'git.example.com' }, [], false],
    ['no host', { protocol: 'https' }, [], false],
    ['a listed host', https, ['other.example', 'GIT.example.com'], true],
    ['a host not listed', https, ['other.example'], false],
    ['the listed host on another port', { ...https, host: 'git.example.com:8443' }, ['git.example.com'], false],
  ] as const)('%s', (_name, request, hosts, expected) => {
    expect(answersFor(request, hosts)).toBe(expected);
  });
});

describe('git credential answer', () => {
  it('writes key=value lines', () => {
    expect(
      formatGitCredential([
        ['username', 'oauth2'],
        ['password', 'tok.en'],
        ['password_expiry_utc', '1700000000'],
      ]),
    ).toBe('username=oauth2\npassword=tok.en\npassword_expiry_utc=1700000000\n');
  });

  it.each(['a\nprotocol=http', 'a\rb', 'a\0b'])('refuses a value that would inject attributes: %j', (value) => {
    expect(() => formatGitCredential([['username', value]])).toThrow(CommandError);
  });
});

describe('reading stdin', () => {
  it('stops at the blank line without waiting for the end of input', async () => {
    const stdin = new PassThrough();
    const read = readInput(stdin, { untilBlankLine: true });
    stdin.write('protocol=https\nho');
    stdin.write('st=a.example\n\nlater=1\n'); // the stream stays open, as a person's terminal would
    await expect(read).resolves.toBe('protocol=https\nhost=a.example\n');
  });

  it('an immediately blank line is an empty request', async () => {
    const stdin = new PassThrough();
    const read = readInput(stdin, { untilBlankLine: true });
    stdin.write('\nprotocol=https\n');
    await expect(read).resolves.toBe('');
  });

  it('reads to the end otherwise, with a multi-byte character split across chunks', async () => {
    const stdin = new PassThrough();
    const read = readInput(stdin, { untilBlankLine: false });
    const bytes = Buffer.from('https://regïstry.example\n\n');
    stdin.write(bytes.subarray(0, 12)); // inside the two bytes of "ï"
    stdin.end(bytes.subarray(12));
    await expect(read).resolves.toBe('https://regïstry.example\n\n');
  });

  it('refuses endless input', async () => {
    const stdin = new PassThrough();
    const read = readInput(stdin, { untilBlankLine: true });
    stdin.write('x'.repeat(70 * 1024));
    await expect(read).rejects.toThrow(/too long/);
  });
});

describe('docker credential helper', () => {
  it('reads the server URL as docker sends it (one line, maybe without a newline)', () => {
    expect(parseDockerServerUrl('https://registry.example.com\n')).toBe('https://registry.example.com');
    expect(parseDockerServerUrl('registry.example.com')).toBe('registry.example.com');
    expect(() => parseDockerServerUrl(' \n')).toThrow(CommandError);
  });

  it.each([
    ['a bare host, as credHelpers names it', 'registry.example.com', 'registry.example.com'],
    ['a bare host with a port', 'registry.example.com:5000', 'registry.example.com:5000'],
    ['an https URL with a path (Docker Hub)', 'https://index.docker.io/v1/', 'index.docker.io'],
    ['upper case, and https on its default port', 'HTTPS://Registry.Example.com:443', 'registry.example.com'],
    ['plain http', 'http://registry.example.com', undefined],
    ['another scheme', 'ftp://registry.example.com', undefined],
    ['a user name before the host', 'https://registry.example.com@evil.example', undefined],
    ['not a host', 'a b', undefined],
  ] as const)('the registry host of %s', (_name, serverUrl, host) => {
    expect(registryHost(serverUrl)).toBe(host);
  });

  it('--host takes a host[:port] only', () => {
    expect(listedRegistryHost('Registry.example.com')).toBe('registry.example.com');
    expect(listedRegistryHost('registry.example.com:5000')).toBe('registry.example.com:5000');
    for (const bad of ['', 'https://registry.example.com', 'registry.example.com/v2', 'me@registry.example.com', 'a b']) {
      expect(() => listedRegistryHost(bad), bad).toThrow(CommandError);
    }
  });

  it.each([
    ['a listed registry', 'registry.example.com', ['other.example', 'registry.example.com'], true],
    ['a listed registry named by URL', 'https://registry.example.com/v2/', ['registry.example.com'], true],
    ['a registry not listed', 'evil.example', ['registry.example.com'], false],
    ['Docker Hub when only another registry is listed', 'https://index.docker.io/v1/', ['registry.example.com'], false],
    ['the listed registry on another port', 'registry.example.com:5000', ['registry.example.com'], false],
    ['a listed registry over plain http', 'http://registry.example.com', ['registry.example.com'], false],
    ['a host that only starts like a listed one', 'registry.example.com.evil.example', ['registry.example.com'], false],
  ] as const)('answers for %s (%s)?', (_name, serverUrl, hosts, expected) => {
    expect(answersForRegistry(serverUrl, hosts)).toBe(expected);
  });

  it('answers with the JSON docker reads', () => {
    expect(JSON.parse(dockerCredential('registry.example.com', 'oauth2', 'tok"en'))).toEqual({
      ServerURL: 'registry.example.com',
      Username: 'oauth2',
      Secret: 'tok"en',
    });
  });
});

describe('kubectl ExecCredential', () => {
  it('answers v1 without KUBERNETES_EXEC_INFO, and in the version kubectl names', () => {
    expect(requestedApiVersion(undefined)).toBe('client.authentication.k8s.io/v1');
    const v1 = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } };
    expect(requestedApiVersion(JSON.stringify(v1))).toBe('client.authentication.k8s.io/v1');
    expect(requestedApiVersion(JSON.stringify({ ...v1, apiVersion: 'client.authentication.k8s.io/v1beta1' }))).toBe('client.authentication.k8s.io/v1beta1');
  });

  it('refuses versions it cannot answer and KUBERNETES_EXEC_INFO that is not JSON', () => {
    expect(() => requestedApiVersion(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1alpha1' }))).toThrow(/v1alpha1/);
    expect(() => requestedApiVersion('{')).toThrow(/not JSON/);
  });

  it('has the shape kubectl reads, with an RFC 3339 expiry', () => {
    const credential = execCredential('client.authentication.k8s.io/v1', 'the-token', 1_900_000_000, 1_899_999_000);
    expect(credential).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'the-token', expirationTimestamp: '2030-03-17T17:46:40Z' },
    });
    // RFC 3339 "date-time" in UTC, whole seconds, as Go's time.RFC3339 parses it.
    expect(credential.status.expirationTimestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    expect(Date.parse(credential.status.expirationTimestamp!) / 1000).toBe(1_900_000_000);
  });

  it('leaves the expiry out when it is not in the future', () => {
    expect(execCredential('client.authentication.k8s.io/v1', 't', 100, 100).status).toEqual({ token: 't' });
  });
});

describe('audience', () => {
  const profile: Profile = { issuer: 'https://id.example', client_id: 'latchkey-cli', scope: 'openid', access_token: 't', token_type: 'Bearer', expires_at: 0 };

  it('passes when the profile was signed in for an API and none, or that one, is asked for', () => {
    expect(() => checkAudience({ ...profile, audience: 'https://k8s.example' }, 'default', undefined)).not.toThrow();
    expect(() => checkAudience({ ...profile, audience: 'https://k8s.example' }, 'default', 'https://k8s.example')).not.toThrow();
  });

  it.each([
    ['signed in without --audience', undefined],
    ['signed in for the userinfo endpoint by name', 'https://id.example/userinfo'],
  ])('refuses a token for the userinfo endpoint (%s) with exit 6, naming --audience', (_name, audience) => {
    let error: unknown;
    try {
      checkAudience({ ...profile, ...(audience === undefined ? {} : { audience }) }, 'work', undefined);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).exitCode).toBe(6);
    expect((error as CommandError).message).toContain('latchkey login --audience <API> --profile work');
    expect((error as CommandError).message).toContain('add "--audience <API>" to the helper\'s command');
  });

  it('refuses the userinfo endpoint even when it is the audience asked for', () => {
    const userinfo = 'https://id.example/userinfo';
    expect(() => checkAudience({ ...profile, issuer: 'https://id.example/', audience: userinfo }, 'default', userinfo)).toThrow(/userinfo endpoint only/);
  });

  it('refuses another audience with exit 6 and the login command to run', () => {
    let error: unknown;
    try {
      checkAudience({ ...profile, audience: 'https://api.example' }, 'work', 'https://k8s.example');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).exitCode).toBe(6);
    expect((error as CommandError).message).toContain('latchkey login --audience https://k8s.example --profile work');
    expect(() => checkAudience(profile, 'default', 'https://k8s.example')).toThrow(/default audience/);
  });

  it('refuses a token for the management API ({issuer}/api/v1), as the profile names it or as the token says, asked for or not', () => {
    const management = 'https://id.example/api/v1';
    const fromToken = { ...profile, audience: 'https://k8s.example', access_token: new UnsecuredJWT({ aud: management }).encode() };
    for (const [stored, wanted] of [
      [{ ...profile, audience: management }, undefined],
      [{ ...profile, issuer: 'https://id.example/', audience: management }, management],
      [fromToken, 'https://k8s.example'],
    ] as const) {
      let error: unknown;
      try {
        checkAudience(stored, 'admin', wanted);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(CommandError);
      expect((error as CommandError).exitCode).toBe(6);
      expect((error as CommandError).message).toContain('holds a token for the management API of https://id.example');
      expect((error as CommandError).message).toContain('which a credential helper never hands out');
      expect((error as CommandError).message).toContain('latchkey login --audience <API> --profile <name>');
    }
    // Another server's management API is an API like any other to this issuer's tokens.
    expect(() => checkAudience({ ...profile, audience: 'https://other.example/api/v1' }, 'default', undefined)).not.toThrow();
  });

  it('quotes words for the shell', () => {
    expect(shellWord('https://k8s.example/x')).toBe('https://k8s.example/x');
    expect(shellWord("it's here")).toBe(`'it'\\''s here'`);
  });
});
