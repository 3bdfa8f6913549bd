/**
 * `latchkey credential docker <get|store|erase|list>`: docker's credential-helper protocol
 * (docker/docker-credential-helpers), run through a `docker-credential-latchkey` wrapper named in
 * `credHelpers`. `get` reads the registry from stdin and answers with the access token as the
 * secret, but only for the registries listed with --host (required: docker's `credsStore` sends
 * every registry to one helper, Docker Hub and any image's registry included); `store` and `erase`
 * read their input and keep nothing (latchkey owns the token); `list` lists nothing. A registry
 * named with plain http:// gets no token.
 */
import { CommandError, exitCodes, defineCommand } from '../command.js';
import { audienceOptionHelp, helperProfile, hostListed, readInput } from './credential_helper.js';
import { clientHelp } from './help.js';
import { printable } from './oidc.js';

/** What docker's helper client recognises as "no credentials here" (docker then goes on anonymously). */
export const dockerNotFound = 'credentials not found in native keychain';

export const defaultDockerUsername = 'oauth2';

/** The registry docker asks about: its input, as docker-credential-helpers reads it (lines joined, trimmed). */
export function parseDockerServerUrl(input: string): string {
  const serverUrl = input.replace(/\r?\n/g, '').trim();
  if (!serverUrl) throw new CommandError('no server URL on stdin', exitCodes.usage);
  return serverUrl;
}

/**
 * The host[:port] of a registry as docker names it (a bare host, or a URL such as Docker Hub's
 * `https://index.docker.io/v1/`), in the WHATWG URL parser's form: lower case, IDN as punycode,
 * https's default port left out. Undefined for anything else, plain http included: no token there.
 */
export function registryHost(serverUrl: string): string | undefined {
  const hasScheme = /^[a-z][a-z\d+.-]*:\/\//i.test(serverUrl);
  if (hasScheme && !/^https:\/\//i.test(serverUrl)) return undefined;
  try {
    const url = new URL(hasScheme ? serverUrl : `https://${serverUrl}`);
    // A user name before the host hides which host is meant from a reader (and docker never sends one).
    if (url.username || url.password) return undefined;
    return url.host || undefined;
  } catch {
    return undefined;
  }
}

/** A --host value in the form registryHost gives, so that the two compare as git's --host does. */
export function listedRegistryHost(value: string): string {
  // An authority only: a scheme, path, query, fragment or user name would change what the parser reads.
  const host = /^[^/?#@\\\s]+$/.test(value) ? registryHost(value) : undefined;
  if (host === undefined) throw new CommandError(`--host "${printable(value)}" is not a registry host[:port]`, exitCodes.usage);
  return host;
}

/** Whether to hand the token out for this registry: https only, and one of the hosts listed (listedRegistryHost's form). */
export function answersForRegistry(serverUrl: string, hosts: readonly string[]): boolean {
  const host = registryHost(serverUrl);
  return host !== undefined && hostListed(host, hosts);
}

export function dockerCredential(serverUrl: string, username: string, secret: string): string {
  return `${JSON.stringify({ ServerURL: serverUrl, Username: username, Secret: secret })}\n`;
}

export const dockerActions = ['get', 'store', 'erase', 'list'] as const;

export const credentialDockerCommand = defineCommand({
  usage:
    'latchkey credential docker --host H… [--profile P] [--audience A] [--username U] get|store|erase|list\n' +
    '       run by a docker-credential-latchkey wrapper named in credHelpers of ~/.docker/config.json',
  help: clientHelp(
    [
      '  --host H          a registry (host[:port]) to answer get for; repeatable, at least one: any other',
      '                    registry gets docker\'s "credentials not found"',
      `  --username U      the username to answer with (default: ${defaultDockerUsername})`,
      audienceOptionHelp,
    ].join('\n'),
  ),
  positionals: { min: 1, max: 1 },
  options: {
    profile: { type: 'string' },
    audience: { type: 'string' },
    host: { type: 'string', multiple: true },
    username: { type: 'string' },
  },
  async run(context) {
    const action = context.positionals[0];
    switch (action) {
      case 'list':
        context.stdout.write('{}\n');
        return exitCodes.ok;
      case 'store':
      case 'erase':
        await readInput(context.stdin, { untilBlankLine: false });
        return exitCodes.ok;
      case 'get': {
        const serverUrl = parseDockerServerUrl(await readInput(context.stdin, { untilBlankLine: false }));
        const hosts = (context.values.host ?? []).map(listedRegistryHost);
        if (hosts.length === 0) {
          throw new CommandError(
            'latchkey credential docker get needs --host REGISTRY (repeatable), the registries it may hand the token to: add it in the docker-credential-latchkey wrapper',
            exitCodes.usage,
          );
        }
        if (!answersForRegistry(serverUrl, hosts)) {
          // The protocol's "no": docker goes on without credentials, as for any registry it has none for.
          context.stdout.write(`${dockerNotFound}\n`);
          return exitCodes.failure;
        }
        const profile = await helperProfile(context);
        context.stdout.write(dockerCredential(serverUrl, context.values.username || defaultDockerUsername, profile.access_token));
        return exitCodes.ok;
      }
      default:
        throw new CommandError(`unknown action "${printable(String(action))}": expected ${dockerActions.join(', ')}`, exitCodes.usage);
    }
  },
});
