/**
 * The admin commands' remote mode: with `--server URL` (or LATCHKEY_SERVER) a command works
 * through the management API at `URL/api/v1` instead of opening LATCHKEY_DB, with the access token
 * of the person's stored sign-in for that API (`latchkey login --issuer URL --audience URL/api/v1`),
 * refreshed as `latchkey token` refreshes it, and with a DPoP proof per request when that sign-in
 * is DPoP-bound (RFC 9449 §7.1). A profile named by LATCHKEY_PROFILE must have been signed in at
 * `URL` for that API: a token goes only to the issuer it came from (client/token_destination.ts).
 *
 * A command that works remotely says so (`remote: true` in its definition) and asks
 * `managementClient(context)` for a client: undefined means "use the database as before". The
 * dispatcher refuses every other admin command when a server is given, so none of them can
 * quietly change a local database the person did not mean.
 */
import { homedir } from 'node:os';
import { loadClientConfig } from '../config.js';
import { managementAudience } from '../management/management_api.js';
import { CommandError, exitCodes, serverVariable, type CommandIo } from './command.js';
import { CredentialsStore, type Profile } from './client/credentials.js';
import { dpopProof } from './client/dpop_key.js';
import { requireProfile, validProfile } from './client/session.js';
import { requireManagementProfile } from './client/token_destination.js';
import { fetchAsLatchkey } from './client/user_agent.js';
import { visible } from './terminal_text.js';

const loopbackHosts = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * The server the admin commands should work through, or undefined for the database. An access
 * token with management scopes is sent to it, so it must be https (plain http only to this
 * machine, for a server run locally).
 */
export function managementServer(env: NodeJS.ProcessEnv): string | undefined {
  const value = env[serverVariable]?.trim();
  if (value === undefined || value === '') return undefined;
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '')
    throw new CommandError(
      `--server must be the server's https URL (its issuer), e.g. https://login.example.com; got "${visible(value.slice(0, 200))}"`,
      exitCodes.usage,
    );
  if (url.protocol === 'http:' && !loopbackHosts.has(url.hostname))
    throw new CommandError(
      '--server must use https: the access token would travel in the clear (http is allowed to 127.0.0.1 and localhost only)',
      exitCodes.usage,
    );
  return value.replace(/\/+$/, '');
}

/** A problem details body (RFC 9457), as far as this client reads it. */
interface Problem {
  status?: number;
  detail?: string;
  errors?: Array<{ path?: string; message?: string }>;
}

export interface ManagementClient {
  readonly server: string;
  /** One call; the parsed JSON answer (undefined for 204). Refusals become CommandErrors. */
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
  /** Every item of a list, following `next` cursors to the end. */
  listAll<T>(path: string): Promise<T[]>;
}

/** The stored sign-in for this server's management API: LATCHKEY_PROFILE if set, else the one signed in for it. */
function profileName(store: CredentialsStore, env: NodeJS.ProcessEnv, server: string): string {
  const named = env.LATCHKEY_PROFILE?.trim();
  if (named) return named;
  const audience = managementAudience(server);
  const matching = store
    .list()
    .flatMap((p) => ('profile' in p && p.profile.issuer.replace(/\/+$/, '') === server && p.profile.audience === audience ? [p.name] : []));
  if (matching.includes('default')) return 'default';
  const [first] = matching;
  if (first !== undefined) return first;
  throw new CommandError(
    `not signed in to the management API of ${server}: run "latchkey login --issuer ${server} --audience ${audience}" as a person with the admin role`,
    exitCodes.notSignedIn,
  );
}

export function managementClient(context: CommandIo): ManagementClient | undefined {
  const server = managementServer(context.env);
  if (server === undefined) return undefined;
  const settings = loadClientConfig(context.env, homedir());
  const credentials = new CredentialsStore(settings.home, settings.issuer);
  const remoteServer = server;
  const audience = managementAudience(server);
  const signIn = `latchkey login --issuer ${server} --audience ${audience}`;

  async function send(method: string, url: string, profile: Profile, body: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (profile.dpop_jwk) {
      headers.authorization = `DPoP ${profile.access_token}`;
      headers.dpop = await dpopProof(profile.dpop_jwk, { method, url, accessToken: profile.access_token });
    } else {
      headers.authorization = `Bearer ${profile.access_token}`;
    }
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      return await fetchAsLatchkey(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch (err) {
      throw new CommandError(`cannot reach ${server}: ${visible((err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message)}`);
    }
  }

  async function refusal(response: Response): Promise<CommandError> {
    const text = await response.text();
    let problem: Problem = {};
    try {
      problem = JSON.parse(text) as Problem;
    } catch {
      // Not a problem document (a proxy's page): the status says enough.
    }
    const detail = typeof problem.detail === 'string' ? problem.detail : `HTTP ${response.status}`;
    const fields = (problem.errors ?? []).map((e) => `${e.path ?? ''}: ${e.message ?? ''}`).join('; ');
    if (response.status === 401) return new CommandError(`the server did not accept your sign-in (${visible(detail)}): run "${signIn}"`, exitCodes.notSignedIn);
    if (response.status === 403)
      return new CommandError(
        `the server refused: ${visible(detail)} Your sign-in does not hold it: the admin role holds every scope of the management API (run "${signIn}" again after being given the role).`,
      );
    if (response.status === 429)
      return new CommandError(`the server refused: ${visible(detail)} (retry after ${response.headers.get('retry-after') ?? 'a while'} seconds)`);
    return new CommandError(`the server refused: ${visible(detail)}${fields === '' ? '' : ` (${visible(fields)})`}`);
  }

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const name = profileName(credentials, context.env, remoteServer);
    const url = `${audience}${path}`;
    // Before anything is sent, even a refresh: LATCHKEY_PROFILE may name a sign-in made elsewhere.
    requireManagementProfile(requireProfile(credentials, name), name, remoteServer);
    let profile = await validProfile(credentials, name);
    let response = await send(method, url, profile, body);
    // A token the server no longer takes (revoked, a key rotated) may be renewed once by refreshing.
    if (response.status === 401 && profile.refresh_token) {
      await response.body?.cancel();
      profile = await validProfile(credentials, name, { force: true });
      response = await send(method, url, profile, body);
    }
    if (!response.ok) throw await refusal(response);
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  return {
    server,
    call,
    async listAll<T>(path: string): Promise<T[]> {
      const items: T[] = [];
      let cursor: string | null = null;
      do {
        const separator = path.includes('?') ? '&' : '?';
        const query: string = cursor === null ? `${separator}limit=200` : `${separator}limit=200&cursor=${encodeURIComponent(cursor)}`;
        const page: { data: T[]; next: string | null } = await call('GET', `${path}${query}`);
        items.push(...page.data);
        cursor = page.next;
      } while (cursor !== null);
      return items;
    },
  };
}
