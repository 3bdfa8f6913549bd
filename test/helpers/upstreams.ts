/**
 * Stand-in upstreams on real loopback sockets, for the connector tests:
 * - an OpenID Provider whose every answer a test can bend (a wrong issuer, audience or nonce, an
 *   unverified email, no `iss` in the response, a hang) — the attacks a real provider never makes;
 * - GitHub's OAuth web flow and REST endpoints (github.com cannot be reached from here), as
 *   documented at docs.github.com: /login/oauth/authorize, /login/oauth/access_token, /user,
 *   /user/emails, /user/teams, /user/orgs under /api/v3 (GitHub Enterprise's layout).
 * Both check what a real one checks: the redirect URI, the client secret, PKCE.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';

export interface RunningUpstream {
  base: string;
  close(): Promise<void>;
}

async function listen(
  handler: (request: IncomingMessage, response: ServerResponse, body: URLSearchParams) => unknown,
): Promise<{ server: Server; base: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      Promise.resolve(handler(request, response, new URLSearchParams(Buffer.concat(chunks).toString('utf8')))).catch((err: unknown) => {
        if (!response.headersSent) response.writeHead(500).end(err instanceof Error ? err.message : String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

const json = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

interface PendingCode {
  clientId: string;
  redirectUri: string;
  nonce: string | undefined;
  challenge: string | undefined;
}

// ─── OpenID Provider ────────────────────────────────────────────────────────────────────────

export interface FakeOidcPerson {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
  groups?: string[];
}

export interface FakeOidcBehaviour {
  person: FakeOidcPerson;
  /** Put these claims in the id_token instead of the right ones (attacks). */
  idTokenOverrides: Record<string, unknown>;
  /** Leave these claims out of the id_token (then userinfo has them). */
  idTokenOmits: string[];
  /** The `iss` sent back with the code; undefined: the right one; null: none. */
  responseIss: string | null | undefined;
  /** Answer /authorize with this error instead of a code. */
  authorizeError: string | undefined;
  /** Never answer these paths (a dead upstream). */
  hang: Set<string>;
  /** Announce the authorization endpoint under this origin instead (it is served here all the same). */
  authorizationOrigin: string | undefined;
  /** Sign id_tokens with a key the JWKS does not publish (a forgery with a known kid). */
  signWithUnpublishedKey: boolean;
  /** The auth_time claim: when the person last signed in here (default: now, as if asked again). */
  authTime: number | undefined;
  /** The issuer its discovery document names (default: its own address), as a provider set up under another name would. */
  discoveryIssuer: string | undefined;
}

export interface FakeOidcProvider extends RunningUpstream {
  clientId: string;
  clientSecret: string;
  behaviour: FakeOidcBehaviour;
  /** What /authorize was last asked. */
  lastAuthorize: URLSearchParams | undefined;
  /** How the client authenticated at the token endpoint last. */
  lastTokenAuth: 'client_secret_basic' | 'client_secret_post' | undefined;
}

export async function startFakeOidcProvider(
  person: FakeOidcPerson = { sub: 'upstream-sub-1', email: 'pat@upstream.example', email_verified: true, name: 'Pat Upstream', preferred_username: 'pat' },
): Promise<FakeOidcProvider> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const forger = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'fake-1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, PendingCode>();
  const tokens = new Map<string, FakeOidcPerson>();
  const provider: FakeOidcProvider = {
    base: '',
    clientId: 'latchkey-downstream',
    clientSecret: randomBytes(16).toString('hex'),
    behaviour: {
      person,
      idTokenOverrides: {},
      idTokenOmits: [],
      responseIss: undefined,
      authorizeError: undefined,
      hang: new Set(),
      authorizationOrigin: undefined,
      signWithUnpublishedKey: false,
      authTime: undefined,
      discoveryIssuer: undefined,
    },
    lastAuthorize: undefined,
    lastTokenAuth: undefined,
    close: async () => undefined,
  };
  const sign = (claims: Record<string, unknown>, key: CryptoKey) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'fake-1', typ: 'JWT' }).sign(key);
  const { server, base } = await listen(async (request, response, body) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (provider.behaviour.hang.has(url.pathname)) return; // never answers
    switch (`${request.method} ${url.pathname}`) {
      case 'GET /.well-known/openid-configuration':
        return json(response, 200, {
          issuer: provider.behaviour.discoveryIssuer ?? base,
          authorization_endpoint: `${provider.behaviour.authorizationOrigin ?? base}/authorize`,
          token_endpoint: `${base}/token`,
          jwks_uri: `${base}/jwks`,
          userinfo_endpoint: `${base}/userinfo`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          code_challenge_methods_supported: ['S256'],
          token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
          authorization_response_iss_parameter_supported: true,
        });
      case 'GET /jwks':
        return json(response, 200, { keys: [jwk] });
      case 'GET /authorize': {
        provider.lastAuthorize = url.searchParams;
        const redirect = new URL(url.searchParams.get('redirect_uri') ?? '');
        const state = url.searchParams.get('state');
        if (state) redirect.searchParams.set('state', state);
        const iss = provider.behaviour.responseIss === undefined ? base : provider.behaviour.responseIss;
        if (iss !== null) redirect.searchParams.set('iss', iss);
        if (provider.behaviour.authorizeError) {
          redirect.searchParams.set('error', provider.behaviour.authorizeError);
        } else {
          const code = randomBytes(16).toString('hex');
          codes.set(code, {
            clientId: url.searchParams.get('client_id') ?? '',
            redirectUri: url.searchParams.get('redirect_uri') ?? '',
            nonce: url.searchParams.get('nonce') ?? undefined,
            challenge: url.searchParams.get('code_challenge') ?? undefined,
          });
          redirect.searchParams.set('code', code);
        }
        return void response.writeHead(302, { location: redirect.href }).end();
      }
      case 'POST /token': {
        const code = codes.get(body.get('code') ?? '');
        codes.delete(body.get('code') ?? '');
        const fail = (error: string) => json(response, 400, { error });
        if (!code) return fail('invalid_grant');
        // client_secret_basic (RFC 6749 §2.3.1: form-urlencoded id and secret, then Basic) or _post.
        const basic = /^Basic (.+)$/i.exec(request.headers.authorization ?? '');
        const [clientId, clientSecret] = basic
          ? Buffer.from(basic[1]!, 'base64')
              .toString('utf8')
              .split(':')
              .map((part) => decodeURIComponent(part.replace(/\+/g, ' ')))
          : [body.get('client_id'), body.get('client_secret')];
        provider.lastTokenAuth = basic ? 'client_secret_basic' : 'client_secret_post';
        if (clientId !== provider.clientId || clientSecret !== provider.clientSecret) return json(response, 401, { error: 'invalid_client' });
        if (body.get('redirect_uri') !== code.redirectUri) return fail('invalid_grant');
        if (code.challenge !== undefined && s256(body.get('code_verifier') ?? '') !== code.challenge) return fail('invalid_grant');
        const now = Math.floor(Date.now() / 1000);
        const access = randomBytes(16).toString('hex');
        const p = provider.behaviour.person;
        tokens.set(access, p);
        const claims: Record<string, unknown> = {
          ...p,
          iss: base,
          aud: provider.clientId,
          iat: now,
          exp: now + 300,
          auth_time: provider.behaviour.authTime ?? now,
          ...(code.nonce ? { nonce: code.nonce } : {}),
        };
        for (const omitted of provider.behaviour.idTokenOmits) delete claims[omitted];
        Object.assign(claims, provider.behaviour.idTokenOverrides);
        return json(response, 200, {
          access_token: access,
          token_type: 'Bearer',
          expires_in: 300,
          id_token: await sign(claims, provider.behaviour.signWithUnpublishedKey ? forger.privateKey : privateKey),
        });
      }
      case 'GET /userinfo': {
        const p = tokens.get((request.headers.authorization ?? '').replace(/^Bearer /i, ''));
        return p ? json(response, 200, p) : json(response, 401, { error: 'invalid_token' });
      }
      default:
        return json(response, 404, { error: 'not_found' });
    }
  });
  provider.base = base;
  provider.close = () => close(server);
  return provider;
}

// ─── GitHub ─────────────────────────────────────────────────────────────────────────────────

export interface FakeGithubAccount {
  id: number;
  login: string;
  name: string | null;
  emails: Array<{ email: string; primary: boolean; verified: boolean }>;
  orgs: string[];
  teams: Array<{ org: string; slug: string }>;
}

export interface FakeGithub extends RunningUpstream {
  /** The --api-url of the connector: GitHub Enterprise's layout on this server. */
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  account: FakeGithubAccount;
  /** Answer /login/oauth/authorize with this error (access_denied: the person clicked Cancel). */
  authorizeError: string | undefined;
  /** Never answer these paths (a dead API). */
  hang: Set<string>;
  /** Answer these paths with an endless body (a hostile or broken API). */
  flood: Set<string>;
}

export async function startFakeGithub(): Promise<FakeGithub> {
  const codes = new Map<string, PendingCode>();
  const tokens = new Set<string>();
  const github: FakeGithub = {
    base: '',
    apiUrl: '',
    clientId: 'Iv1.fake0123456789',
    clientSecret: randomBytes(20).toString('hex'),
    account: {
      id: 4242,
      login: 'octo-cat',
      name: 'Octo Cat',
      emails: [
        { email: 'octo@old.example', primary: false, verified: true },
        { email: 'octo@example.com', primary: true, verified: true },
      ],
      orgs: ['acme'],
      teams: [
        { org: 'acme', slug: 'platform' },
        { org: 'other-org', slug: 'hobby' },
      ],
    },
    authorizeError: undefined,
    hang: new Set(),
    flood: new Set(),
    close: async () => undefined,
  };
  const { server, base } = await listen((request, response, body) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (github.hang.has(url.pathname)) return; // never answers
    if (github.flood.has(url.pathname)) {
      response.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', pump);
      };
      response.write('[');
      pump();
      return;
    }
    const authorized = tokens.has((request.headers.authorization ?? '').replace(/^Bearer /i, ''));
    const a = github.account;
    switch (`${request.method} ${url.pathname}`) {
      case 'GET /login/oauth/authorize': {
        const redirect = new URL(url.searchParams.get('redirect_uri') ?? '');
        redirect.searchParams.set('state', url.searchParams.get('state') ?? '');
        if (github.authorizeError) {
          redirect.searchParams.set('error', github.authorizeError);
        } else {
          const code = randomBytes(10).toString('hex');
          codes.set(code, {
            clientId: url.searchParams.get('client_id') ?? '',
            redirectUri: redirect.origin + redirect.pathname,
            nonce: undefined,
            challenge: url.searchParams.get('code_challenge') ?? undefined,
          });
          redirect.searchParams.set('code', code);
        }
        return void response.writeHead(302, { location: redirect.href }).end();
      }
      case 'POST /login/oauth/access_token': {
        const code = codes.get(body.get('code') ?? '');
        codes.delete(body.get('code') ?? '');
        // GitHub answers errors with 200 and an error body: the client's credentials are judged
        // first (incorrect_client_credentials), then the code (bad_verification_code).
        if (body.get('client_id') !== github.clientId || body.get('client_secret') !== github.clientSecret)
          return json(response, 200, { error: 'incorrect_client_credentials' });
        if (!code) return json(response, 200, { error: 'bad_verification_code' });
        if (code.challenge !== undefined && s256(body.get('code_verifier') ?? '') !== code.challenge)
          return json(response, 200, { error: 'bad_verification_code' });
        const token = `gho_${randomBytes(16).toString('hex')}`;
        tokens.add(token);
        return json(response, 200, { access_token: token, token_type: 'bearer', scope: 'read:org,read:user,user:email' });
      }
      case 'GET /api/v3/meta':
        // Public, as GitHub's: what the API serves from (abridged).
        return json(response, 200, { verifiable_password_authentication: false });
      case 'GET /api/v3/user':
        return authorized ? json(response, 200, { id: a.id, login: a.login, name: a.name }) : json(response, 401, { message: 'Bad credentials' });
      case 'GET /api/v3/user/emails':
        return authorized ? json(response, 200, a.emails) : json(response, 401, { message: 'Bad credentials' });
      case 'GET /api/v3/user/orgs':
        return authorized
          ? json(
              response,
              200,
              a.orgs.map((login) => ({ login })),
            )
          : json(response, 401, { message: 'Bad credentials' });
      case 'GET /api/v3/user/teams':
        return authorized
          ? json(
              response,
              200,
              a.teams.map((t) => ({ slug: t.slug, organization: { login: t.org } })),
            )
          : json(response, 401, { message: 'Bad credentials' });
      default:
        return json(response, 404, { message: 'Not Found' });
    }
  });
  github.base = base;
  github.apiUrl = `${base}/api/v3`;
  github.close = () => close(server);
  return github;
}

/** A server that accepts connections and never answers: a dead upstream. */
export async function startSilentServer(): Promise<RunningUpstream> {
  const { server, base } = await listen(() => undefined);
  return { base, close: () => close(server) };
}

// ─── Directories that stall ─────────────────────────────────────────────────────────────────

async function listenTcp(onConnection: (socket: Socket) => void): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ldap://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** An LDAP address that accepts connections and never says a word. */
export function startSilentDirectory(): Promise<{ url: string; close(): Promise<void> }> {
  return listenTcp(() => undefined);
}

/**
 * A directory that agrees to StartTLS (an ExtendedResponse, resultCode success, RFC 4511 §4.14.2)
 * and then never answers the TLS handshake: a client that waits for the handshake without a
 * deadline hangs here for good.
 */
export function startStallingStartTlsDirectory(): Promise<{ url: string; close(): Promise<void> }> {
  return listenTcp((socket) => {
    socket.once('data', (request: Buffer) => {
      // LDAPMessage ::= SEQUENCE { messageID INTEGER, protocolOp ... }: the id follows `30 LL 02 01`
      // (a short length; the StartTLS request is small).
      const messageId = request[2] === 0x02 && request[3] === 0x01 ? request[4]! : 1;
      socket.write(Buffer.from([0x30, 0x0c, 0x02, 0x01, messageId, 0x78, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00]));
      // …then silence, whatever the client sends (its ClientHello).
    });
  });
}
