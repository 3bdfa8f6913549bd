/**
 * What the credential helpers (`latchkey credential kubectl|git|docker`) share: a profile's access
 * token through the same locked refresh path as `latchkey token`, refused when the profile was
 * signed in for another audience than the one asked for, for no API at all, or for the management
 * API (a token that administers the server is never handed to another host); the list of hosts a
 * helper may answer for; and reading what the calling tool pipes in.
 */
import { homedir } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { loadClientConfig } from '../../config.js';
import { CommandError, exitCodes, type CommandContext } from '../command.js';
import { CredentialsStore, type Profile } from './credentials.js';
import { printable } from './oidc.js';
import { requireProfile, validProfile } from './session.js';
import { isManagementToken } from './token_destination.js';

export const audienceOptionHelp =
  '  --audience A      refuse (exit 6) unless the profile was signed in with --audience A; without it,\n' +
  '                    refuse a profile signed in for no API (login without --audience: userinfo only)\n';

import { shellWord } from './sign_in_hint.js';

export { shellWord };

/** The userinfo endpoint of the profile's issuer: the audience of a token asked for without one. */
function userinfoAudience(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/userinfo`;
}

/**
 * A token for another audience would be refused by the API it is sent to, or worse accepted by one
 * it was not meant for: the person signs in again for the audience instead. A token for the
 * userinfo endpoint (a sign-in without --audience) is for no API at all: handed to a cluster, git
 * server or registry, it would let that host read the person's claims at userinfo and replay it to
 * any API that does not check `aud` (RFC 9068 §4), so a helper never hands one out. Only what the
 * profile stores counts: the provider's default audience cannot be known from here.
 */
export function checkAudience(profile: Profile, name: string, wanted: string | undefined, defaultIssuer?: string): void {
  // The server too, when it is not the one `latchkey login` goes to by default.
  const issuer = defaultIssuer !== undefined && profile.issuer !== defaultIssuer ? ` --issuer ${shellWord(profile.issuer)}` : '';
  // A management-API token administers the identity provider itself: handed to a git host, a
  // registry or a cluster, it would let that host change users, clients and keys.
  if (isManagementToken(profile)) {
    throw new CommandError(
      `the profile "${printable(name)}" holds a token for the management API of ${printable(profile.issuer)}, which a credential helper never hands out (git hosts, registries and clusters would hold the power to administer the server): ` +
        `sign in for the API they serve in a profile of its own with "latchkey login --audience <API> --profile <name>${issuer}", and use "${printable(name)}" only as LATCHKEY_PROFILE=${shellWord(name)} latchkey … --server ${shellWord(profile.issuer)}`,
      exitCodes.notSignedIn,
    );
  }
  if (wanted !== undefined && profile.audience !== wanted) {
    const held = profile.audience === undefined ? "the provider's default audience" : `the audience "${printable(profile.audience)}"`;
    throw new CommandError(
      `the profile "${printable(name)}" holds a token for ${held}, not for "${printable(wanted)}": run "latchkey login --audience ${shellWord(wanted)} --profile ${shellWord(name)}${issuer}"`,
      exitCodes.notSignedIn,
    );
  }
  if (profile.audience === undefined || profile.audience === userinfoAudience(profile.issuer)) {
    throw new CommandError(
      `the profile "${printable(name)}" holds a token for the userinfo endpoint only (signed in without --audience), which a credential helper never hands out: ` +
        `sign in for the API with "latchkey login --audience <API> --profile ${shellWord(name)}${issuer}" and add "--audience <API>" to the helper's command`,
      exitCodes.notSignedIn,
    );
  }
}

/**
 * Whether `host` (host[:port], as the calling tool names it) is one of `hosts`. Host names are
 * case-insensitive (RFC 4343); a port must match exactly, so a listed host on another port is
 * another server.
 */
export function hostListed(host: string, hosts: readonly string[]): boolean {
  const wanted = host.toLowerCase();
  return hosts.some((h) => h.toLowerCase() === wanted);
}

/** The profile named by --profile, checked against --audience, with an access token valid for at least a minute. */
export async function helperProfile(context: CommandContext<{ profile?: string; audience?: string }>): Promise<Profile> {
  const name = context.values.profile ?? 'default';
  const audience = context.values.audience || undefined;
  const client = loadClientConfig(context.env, homedir());
  const store = new CredentialsStore(client.home, client.issuer);
  const stored = requireProfile(store, name);
  // kubectl, git and docker send the token as a bearer token: a DPoP-bound one would be refused
  // (and a helper must never weaken the binding by pretending otherwise).
  if (stored.dpop_jwk !== undefined) {
    throw new CommandError(
      `the profile "${printable(name)}" is bound to a DPoP key (login --dpop), which kubectl, git and docker cannot prove: sign in for them with "latchkey login --audience <API> --profile <another name>" without --dpop`,
      exitCodes.failure,
    );
  }
  checkAudience(stored, name, audience, store.defaultIssuer);
  return validProfile(store, name);
}

/** Requests are a few lines; anything this long is not one. */
const inputLimit = 64 * 1024;

/**
 * Reads stdin to its end or, with `untilBlankLine`, up to the first blank line (git's helper
 * protocol ends a request either way, and a person typing one ends it with an empty line).
 * Returns the text before the blank line.
 */
export function readInput(stdin: NodeJS.ReadableStream, options: { untilBlankLine: boolean }): Promise<string> {
  return new Promise((resolve, reject) => {
    const decoder = new StringDecoder('utf8');
    let text = '';
    const stop = () => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.off('error', onError);
      stdin.pause();
      // A caller that keeps its end open after the blank line must not keep this process alive.
      (stdin as { unref?: () => void }).unref?.();
    };
    const onData = (chunk: Buffer | string) => {
      text += typeof chunk === 'string' ? chunk : decoder.write(chunk);
      if (options.untilBlankLine) {
        const blank = /(?:^|\n)\r?\n/.exec(text);
        if (blank) {
          stop();
          resolve(text.slice(0, blank.index + (blank[0].startsWith('\n') && blank.index > 0 ? 1 : 0)));
          return;
        }
      }
      if (text.length > inputLimit) {
        stop();
        reject(new CommandError('the input on stdin is too long', exitCodes.usage));
      }
    };
    const onEnd = () => {
      stop();
      resolve(text + decoder.end());
    };
    const onError = (err: Error) => {
      stop();
      reject(new CommandError(`cannot read stdin: ${err.message}`));
    };
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.once('error', onError);
    stdin.resume();
  });
}
