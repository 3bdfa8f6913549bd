/**
 * GitHub (and GitHub Enterprise, `--api-url`): the OAuth 2.0 web flow with state and PKCE S256
 * through openid-client, then the REST API: `/user` for the stable numeric id and login,
 * `/user/emails` for the primary verified address, `/user/orgs` and `/user/teams` for `--org`
 * restrictions and `org:team` groups. Every request has a time limit (LATCHKEY_UPSTREAM_TIMEOUT).
 */
import * as oidc from 'openid-client';
import type { GithubConfig } from './connector_config.js';
import { isUnreachable } from './unreachable.js';
import { oauthErrorCode } from './upstream_cause.js';
import { cleanGroups, misconfiguredMessage, UpstreamError, type UpstreamProfile } from './upstream_profile.js';

const scope = 'read:user user:email read:org';

/** Where people sign in: github.com for the public API, the same host for GitHub Enterprise. */
export function githubWebBase(apiUrl: string): string {
  const api = apiUrl.replace(/\/+$/, '');
  if (api === 'https://api.github.com') return 'https://github.com';
  if (api.endsWith('/api/v3')) return api.slice(0, -'/api/v3'.length);
  return new URL(api).origin;
}

export interface GithubUpstream {
  settings: GithubConfig;
  secret: string;
  timeoutSeconds: number;
}

function configuration({ settings, secret, timeoutSeconds }: GithubUpstream): oidc.Configuration {
  const web = githubWebBase(settings.apiUrl);
  const config = new oidc.Configuration(
    { issuer: web, authorization_endpoint: `${web}/login/oauth/authorize`, token_endpoint: `${web}/login/oauth/access_token` },
    settings.clientId,
    undefined,
    oidc.ClientSecretPost(secret),
  );
  if (web.startsWith('http:')) oidc.allowInsecureRequests(config);
  config.timeout = timeoutSeconds;
  return config;
}

export function githubAuthorizationUrl(upstream: GithubUpstream, params: { redirectUri: string; state: string; codeChallenge: string }): URL {
  return oidc.buildAuthorizationUrl(configuration(upstream), {
    redirect_uri: params.redirectUri,
    scope,
    state: params.state,
    code_challenge: params.codeChallenge,
    code_challenge_method: 'S256',
    allow_signup: 'false',
  });
}

/** GitHub's answers are small; anything larger is not read into memory. */
const maxAnswerBytes = 1024 * 1024;

async function boundedText(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxAnswerBytes) {
      await reader.cancel().catch(() => undefined);
      throw new UpstreamError('GitHub answered in a way that cannot be read.', 'invalid_response', `answer larger than ${maxAnswerBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function api<T>({ settings, timeoutSeconds }: GithubUpstream, token: string, path: string): Promise<T> {
  let text: string;
  try {
    const response = await fetch(`${settings.apiUrl.replace(/\/+$/, '')}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'user-agent': 'Latchkey', 'x-github-api-version': '2022-11-28' },
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
      redirect: 'error',
    });
    if (!response.ok) throw new UpstreamError('GitHub refused to say who you are. Try again.', 'invalid_response', `${path} answered ${response.status}`);
    text = await boundedText(response);
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    if (isUnreachable(err)) throw new UpstreamError('GitHub could not be reached. Try again in a moment.', 'unreachable', (err as Error).message);
    throw new UpstreamError('GitHub answered in a way that cannot be read.', 'invalid_response', `${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UpstreamError('GitHub answered in a way that cannot be read.', 'invalid_response', `${path} is not JSON`);
  }
}

interface GithubUser {
  id?: unknown;
  login?: unknown;
  name?: unknown;
}
interface GithubEmail {
  email?: unknown;
  primary?: unknown;
  verified?: unknown;
}
interface GithubTeam {
  slug?: unknown;
  organization?: { login?: unknown };
}
interface GithubOrg {
  login?: unknown;
}

export async function githubCallback(upstream: GithubUpstream, currentUrl: URL, expected: { state: string; codeVerifier: string }): Promise<UpstreamProfile> {
  const { settings } = upstream;
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
  try {
    tokens = await oidc.authorizationCodeGrant(configuration(upstream), currentUrl, {
      pkceCodeVerifier: expected.codeVerifier,
      expectedState: expected.state,
      idTokenExpected: false,
    });
  } catch (err) {
    if ((err as { error?: string }).error === 'access_denied') throw new UpstreamError('The sign-in was cancelled at GitHub.', 'denied');
    if (isUnreachable(err)) {
      throw new UpstreamError('GitHub did not answer. Try again in a moment.', 'unreachable', (err as Error).message);
    }
    // GitHub's documented answer to a wrong client id or secret (with HTTP 200).
    const code = oauthErrorCode(err);
    if (code === 'incorrect_client_credentials' || code === 'invalid_client') {
      throw new UpstreamError(
        misconfiguredMessage,
        'misconfigured',
        `GitHub refused the client ${settings.clientId} (${code}): check the connector's client id and secret`,
      );
    }
    throw new UpstreamError('GitHub answered in a way that cannot be trusted. Try again.', 'invalid_response', (err as Error).message);
  }
  const token = tokens.access_token;
  const user = await api<GithubUser>(upstream, token, '/user');
  if ((typeof user.id !== 'number' && typeof user.id !== 'string') || typeof user.login !== 'string') {
    throw new UpstreamError('GitHub did not say who you are.', 'invalid_response', '/user without id or login');
  }
  const emails = await api<GithubEmail[]>(upstream, token, '/user/emails');
  const primary = Array.isArray(emails) ? emails.find((e) => e.primary === true && e.verified === true && typeof e.email === 'string') : undefined;
  const teams = await api<GithubTeam[]>(upstream, token, '/user/teams?per_page=100');
  const groups = cleanGroups(
    (Array.isArray(teams) ? teams : [])
      .filter((t) => typeof t.slug === 'string' && typeof t.organization?.login === 'string')
      .filter((t) => settings.orgs.length === 0 || settings.orgs.some((o) => o.toLowerCase() === String(t.organization?.login).toLowerCase()))
      .map((t) => `${String(t.organization?.login)}:${String(t.slug)}`),
  );
  if (settings.orgs.length > 0) {
    const orgs = await api<GithubOrg[]>(upstream, token, '/user/orgs?per_page=100');
    const member = (Array.isArray(orgs) ? orgs : []).some(
      (o) => typeof o.login === 'string' && settings.orgs.some((allowed) => allowed.toLowerCase() === String(o.login).toLowerCase()),
    );
    if (!member)
      throw new UpstreamError(
        'Your GitHub account is not a member of an organization allowed to sign in here.',
        'not_allowed',
        `${user.login} in none of ${settings.orgs.join(', ')}`,
      );
  }
  return {
    subject: String(user.id),
    username: user.login,
    email: typeof primary?.email === 'string' ? primary.email : undefined,
    emailVerified: primary !== undefined,
    name: typeof user.name === 'string' && user.name !== '' ? user.name : undefined,
    groups,
  };
}
