/**
 * Cross-origin requests from browser applications (the Fetch standard's CORS protocol; OAuth 2.0
 * for Browser-Based Applications). Answered on a fixed list of endpoints only:
 * - discovery and the JWKS, for any origin (`Access-Control-Allow-Origin: *`): they are public;
 * - the token, revocation, device authorization and userinfo endpoints, for an origin registered
 *   for the client the request concerns (ClientRecord.webOrigins), echoed back.
 * Never on pages, /authorize, the admin console or anything else, and never with
 * Access-Control-Allow-Credentials: none of these endpoints reads a cookie, and a page that could
 * send its person's cookies cross-origin and read the answer would be a cross-site request forgery
 * that sees its result. An absent, malformed or unregistered origin gets no CORS header and the
 * ordinary answer. Every answer of these endpoints carries `Vary: Origin`, so that no cache serves
 * one origin's answer to another.
 *
 * A preflight (OPTIONS with Access-Control-Request-Method) has no body, so it cannot tell which
 * client the request will be for: it is answered for an origin registered for any enabled client,
 * and the request itself decides (no Access-Control-Allow-Origin when the origin is not that
 * client's, so the browser withholds the answer from the page).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientOfAccessToken, clientOfForm } from '../oauth/claimed_client.js';
import { requestOrigin } from '../oauth/web_origin.js';
import type { Services } from '../services.js';

interface CrossOriginEndpoint {
  /** The methods a page may use (a preflight for another is not answered). */
  methods: readonly string[];
  /** The client the request concerns, for endpoints answered only to that client's origins; none: any origin. */
  clientOf?: (request: FastifyRequest) => string | undefined;
}

const anyOrigin: CrossOriginEndpoint = { methods: ['GET'] };
const formClient = (request: FastifyRequest) => clientOfForm(request.headers.authorization, request.body);

const endpoints: ReadonlyMap<string, CrossOriginEndpoint> = new Map([
  ['/.well-known/openid-configuration', anyOrigin],
  ['/.well-known/oauth-authorization-server', anyOrigin],
  // RFC 8414 §3.1: the same document for an issuer with a path, the well-known segment first.
  ['/.well-known/oauth-authorization-server/*', anyOrigin],
  ['/.well-known/jwks.json', anyOrigin],
  ['/oauth/token', { methods: ['POST'], clientOf: formClient }],
  ['/oauth/revoke', { methods: ['POST'], clientOf: formClient }],
  ['/oauth/device/code', { methods: ['POST'], clientOf: formClient }],
  ['/userinfo', { methods: ['GET', 'POST'], clientOf: (request) => clientOfAccessToken(request.headers.authorization, request.body) }],
]);

/** The request headers a page may send: client authentication and bearer tokens, form bodies, DPoP proofs (RFC 9449 §4.1). */
const allowedHeaders = 'authorization, content-type, dpop';
/** Response headers a page may read besides the safelisted ones: the challenges of RFC 6750 §3 and RFC 9449 §7.1, and DPoP nonces (RFC 9449 §8). */
const exposedHeaders = 'WWW-Authenticate, DPoP-Nonce';
/**
 * How long a browser may keep a preflight's answer. It grants nothing by itself (each request is
 * decided on its own), so an hour only spares the preflights.
 */
const preflightMaxAgeSeconds = 3600;

/** Adds Origin to the Vary header the reply already has, if it is not there. */
function varyOnOrigin(reply: FastifyReply): void {
  const current = reply.getHeader('vary');
  const values = (Array.isArray(current) ? current.join(',') : typeof current === 'string' ? current : '')
    .split(',')
    .map((value) => value.trim())
    .filter((value) => value !== '');
  if (values.includes('*') || values.some((value) => value.toLowerCase() === 'origin')) return;
  reply.header('vary', [...values, 'Origin'].join(', '));
}

/**
 * Registers the CORS answers on `app` (the root instance, before the routes): the preflight routes
 * of the endpoints above, and a hook that adds the headers to their answers, errors included, so a
 * page can read an OAuth error body.
 */
export function crossOriginRequests(app: FastifyInstance, services: Pick<Services, 'store'>): void {
  const { store } = services;

  // Not an async function, like the other hooks every request runs through: most requests have no
  // Origin header or are not for these endpoints, and pass straight on.
  app.addHook('onSend', (request, reply, payload, done) => {
    const url = request.routeOptions.url;
    const endpoint = request.method === 'OPTIONS' || url === undefined ? undefined : endpoints.get(url);
    if (endpoint === undefined) {
      done(null, payload);
      return;
    }
    varyOnOrigin(reply);
    const origin = requestOrigin(request.headers.origin);
    if (origin === undefined) {
      done(null, payload);
      return;
    }
    if (endpoint.clientOf === undefined) {
      allow(reply, '*');
      done(null, payload);
      return;
    }
    const clientId = endpoint.clientOf(request);
    if (clientId === undefined) {
      done(null, payload);
      return;
    }
    store.findClient(clientId).then(
      (client) => {
        if (client !== undefined && !client.disabled && client.webOrigins.includes(origin)) allow(reply, origin);
        done(null, payload);
      },
      // The answer goes out without CORS headers (the page sees a network error), never a 500 instead.
      () => done(null, payload),
    );
  });

  for (const [url, endpoint] of endpoints) {
    app.options(url, async (request, reply) => {
      varyOnOrigin(reply);
      reply.header('allow', [...endpoint.methods, 'OPTIONS'].join(', '));
      const origin = requestOrigin(request.headers.origin);
      const method = request.headers['access-control-request-method'];
      // Not a preflight, or one for a method, origin or endpoint that is not answered: the plain
      // answer to OPTIONS (RFC 9110 §9.3.7), and the browser refuses the request it meant to send.
      if (origin === undefined || typeof method !== 'string' || !endpoint.methods.includes(method) || !app.hasRoute({ method, url })) {
        return reply.code(204).send();
      }
      if (endpoint.clientOf !== undefined && !(await store.listWebOrigins()).includes(origin)) return reply.code(204).send();
      reply.header('access-control-allow-origin', endpoint.clientOf === undefined ? '*' : origin);
      reply.header('access-control-allow-methods', endpoint.methods.join(', '));
      reply.header('access-control-allow-headers', allowedHeaders);
      reply.header('access-control-max-age', String(preflightMaxAgeSeconds));
      return reply.code(204).send();
    });
  }
}

/** The headers that let a page of `origin` read this answer; never Access-Control-Allow-Credentials. */
function allow(reply: FastifyReply, origin: string): void {
  reply.header('access-control-allow-origin', origin);
  reply.header('access-control-expose-headers', exposedHeaders);
}
