/**
 * buildApp(deps) → a Fastify instance with every plugin and route registered in visible order
 * and the one error handler. It never listens, so tests drive it with app.inject.
 */
import { pageLanguage } from './i18n/page_language.js';
import { translator, type Translator } from './i18n/translate.js';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import cookie from '@fastify/cookie';
import view from '@fastify/view';
import { Eta } from 'eta';
import { ZodError } from 'zod';
import { systemClock, type Clock } from './clock.js';
import { retiredKeyRetention, type Config, type TrustProxy } from './config.js';
import type { Socket } from 'node:net';
import { createSigner, type Signer } from './crypto/signer.js';
import { loadServerSecrets } from './crypto/server_secrets.js';
import { openSecretBox } from './crypto/secret_key_file.js';
import type { SecretBox } from './crypto/secret_box.js';
import { errorMessage, OAuthError } from './errors.js';
import { renderErrorPage, type ErrorPage } from './http/pages.js';
import { baseSecurityHeaders, securityHeaders } from './http/security_headers.js';
import { crossOriginRequests } from './http/cors.js';
import { loggerOptions } from './logging.js';
import { AccessLog, noteRefusal } from './http/access_log.js';
import { requestIdGenerator, requestIdHeader } from './http/request_id.js';
import { createMetrics } from './http/metrics.js';
import { metricsRoutes } from './routes/metrics.js';
import { defaultRateLimits, type RateLimiters } from './limits/rate_limiters.js';
import { SlowLane } from './limits/signin_throttle.js';
import { viewsDir } from './paths.js';
import type { Services } from './services.js';
import type { Store } from './store/store.js';
import { isStoreUnavailable } from './store/unavailable.js';
import { assetRoutes } from './routes/assets.js';
import { authorizeRoutes } from './routes/authorize.js';
import { deviceAuthorizationRoutes } from './routes/device_authorization.js';
import { deviceVerificationRoutes } from './routes/device_verification.js';
import { discoveryRoutes } from './routes/discovery.js';
import { healthRoutes } from './routes/health.js';
import { introspectionRoutes } from './routes/introspection.js';
import { revocationRoutes } from './routes/revocation.js';
import { registrationRoutes } from './routes/registration.js';
import { userinfoRoutes } from './routes/userinfo.js';
import { managementUserRoutes } from './routes/management/users.js';
import { managementRoleRoutes } from './routes/management/roles.js';
import { loginRoutes } from './routes/login.js';
import { connectorRoutes } from './routes/connectors.js';
import { secondFactorRoutes } from './routes/second_factor.js';
import { accountRoutes } from './routes/account.js';
import { logoutRoutes } from './routes/logout.js';
import { accountSecurityRoutes } from './routes/account_security.js';
import { tokenRoutes } from './routes/token.js';
import { parRoutes } from './routes/par.js';
import { passwordResetRoutes } from './routes/password_reset.js';
import { adminRoutes } from './routes/admin/index.js';
import { frameworkProblem, isManagementPath, prepareManagementScope } from './management/api_scope.js';
import { managementClientRoutes } from './routes/management/clients.js';
import { managementApiRoutes } from './routes/management/apis.js';
import { managementKeyRoutes } from './routes/management/keys.js';
import { managementConnectorRoutes } from './routes/management/connectors.js';
import { managementAuditEventRoutes } from './routes/management/audit_events.js';
import { managementSessionRoutes } from './routes/management/sessions.js';
import { managementOpenApiRoutes } from './routes/management/openapi.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import { AuditTrail } from './audit/audit_trail.js';
import { devicePollsFor, type DevicePolls } from './oauth/device_polls.js';
import { clientOutbound } from './oauth/client_outbound.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
  interface FastifyContextConfig {
    /** Errors on this route render a friendly page instead of an OAuth JSON body. */
    page?: boolean;
  }
}

export interface AppDependencies {
  config: Config;
  store: Store;
  clock?: Clock;
  signer?: Signer;
  /** Opens the stored server secrets; default: from LATCHKEY_SECRET_KEY or the key file. */
  secretBox?: SecretBox;
  rateLimits?: RateLimiters;
  /** false silences logs (tests); otherwise pino at config.logLevel. */
  logger?: boolean;
  /** Where /metrics gets its text (a cluster worker asks the primary for every worker's); default: this app's registry. */
  metricsText?: () => Promise<string>;
  /** Where log lines go instead of stdout (tests read the audit trail from it). */
  logStream?: { write(line: string): void };
  /** How the server waits (the sign-in slow-down); default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Where mail goes; default: the SMTP server of LATCHKEY_SMTP_URL, or none. */
  mailer?: Mailer;
  /** Where device-code polls are recorded; default: in memory when this process alone serves the store. */
  devicePolls?: DevicePolls;
}

/** OAuth bodies are small; anything larger is refused before parsing (413). */
const bodyLimitBytes = 64 * 1024;

export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config, store } = deps;
  const clock = deps.clock ?? systemClock;
  const app = Fastify({
    logger: deps.logger === false ? false : loggerOptions(config.logLevel, deps.logStream, { sync: config.workers > 1 }),
    bodyLimit: bodyLimitBytes,
    trustProxy: trustProxyOption(config.trustProxy),
    return503OnClosing: true,
    logController: new AccessLog(),
    // Error pages show it, X-Request-Id sends it, every log line of the request carries it.
    genReqId: requestIdGenerator(config.trustProxy !== false),
    // A client that never finishes its request is cut off (and cannot hold up a shutdown for long).
    requestTimeout: 30_000,
    connectionTimeout: 30_000,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    // Requests Fastify refuses before routing (a malformed URL) still get an OAuth error body.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const oauthError = toOAuthError(error);
      if (isManagementPath(request.url)) {
        // The management API answers every refusal as RFC 9457 problem details, these included.
        const problem = frameworkProblem(oauthError.status);
        void reply.code(problem.status).headers(baseSecurityHeaders(config)).header('cache-control', 'no-store').type(problem.contentType).send(problem.body);
        return;
      }
      void reply.code(oauthError.status).headers(baseSecurityHeaders(config)).header('cache-control', 'no-store').send(oauthError.toJSON());
    },
    // Requests Node's HTTP parser refuses (huge headers, bad bytes) get one too, then the socket closes.
    clientErrorHandler: (error: Error, socket: Socket) => {
      if (!socket.writable) return;
      const code = (error as NodeJS.ErrnoException).code;
      const [status, reason] = code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
      const body = JSON.stringify({ error: 'invalid_request', error_description: 'The request could not be parsed.' });
      const headers = Object.entries({ ...baseSecurityHeaders(config), 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.end(`HTTP/1.1 ${status} ${reason}\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    },
  });

  const secretBox = deps.secretBox ?? (await openSecretBox(config, store));
  const services: Services = {
    config,
    store,
    clock,
    signer:
      deps.signer ??
      (await createSigner(store, clock, {
        issuer: config.issuer,
        accessTokenAlgorithm: config.signingAlg,
        retiredKeyRetention: retiredKeyRetention(config),
        secretBox,
        onSigningProblem: (problem) =>
          problem === undefined
            ? app.log.info({ event: 'signing.restored' }, 'the signing keys can be used again')
            : app.log.error({ event: 'signing.unavailable', problem }, 'cannot sign tokens: the newest signing key in the database cannot be used'),
      })),
    rateLimits: deps.rateLimits ?? defaultRateLimits(config, clock, store),
    ...(await loadServerSecrets(store, secretBox)),
    secretBox,
    metrics: createMetrics(deps.metricsText),
    sleep: deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    signInSlowLane: new SlowLane(),
    mailer: deps.mailer ?? createMailer(config),
    auditTrail: new AuditTrail(store, app.log),
    devicePolls: deps.devicePolls ?? devicePollsFor(config, store),
    outbound: clientOutbound(config.outboundAllow),
  };
  app.decorate('services', services);
  // A property every request has from the start keeps request objects one shape (a WeakMap beside
  // them cost a microsecond a request).
  app.decorateRequest('refusal', undefined);
  // What is still batched is stored before the store closes (the server closes the app first).
  app.addHook('onClose', async () => {
    await services.auditTrail.flush();
  });

  // Only form bodies are accepted (the contract); JSON and text bodies are refused with 400.
  app.removeAllContentTypeParsers();
  await app.register(formbody);
  await app.register(cookie);
  await app.register(view, {
    engine: { eta: new Eta({ views: viewsDir, cache: true, autoEscape: true }) },
    root: viewsDir,
    production: true,
    // The sign-in page offers "Forgot your password?" only when a reset mail can be sent.
    defaultContext: { passwordResetAvailable: services.mailer !== undefined },
  });

  // The hooks every request runs through are plain callbacks, not async functions: an async onSend
  // hook makes every reply finish a turn later, and a reply awaited before it has finished waits
  // for its stream (Fastify's Reply.then): together a visible part of a short request.
  const addSecurityHeaders = securityHeaders(config);
  // Graceful shutdown: Fastify closes idle keep-alive connections when closing starts, but the
  // requests still in flight then would leave theirs open (up to the keep-alive timeout). Telling
  // them "Connection: close" lets each socket end with its response, so close() can finish.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    addSecurityHeaders(request, reply);
    reply.header(requestIdHeader, request.id);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  // CORS for browser applications, on the few endpoints they call (before the routes it covers).
  crossOriginRequests(app, services);
  app.addHook('onResponse', (request, reply, done) => {
    services.metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  app.setErrorHandler(errorHandler(services));
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).header('cache-control', 'no-store');
    if (request.method === 'GET' && (request.headers.accept ?? '').includes('text/html')) {
      return renderErrorPage(request, reply, services, { heading: 'Page not found', message: 'There is nothing at this address.' }, 404);
    }
    return reply.send({ error: 'not_found', error_description: 'There is nothing at this address.' });
  });

  await app.register(assetRoutes);
  await app.register(healthRoutes);
  await app.register(metricsRoutes);
  await app.register(discoveryRoutes);
  await app.register(deviceAuthorizationRoutes);
  await app.register(tokenRoutes);
  await app.register(parRoutes);
  await app.register(revocationRoutes);
  await app.register(introspectionRoutes);
  // Dynamic client registration (RFC 7591/7592): the one plugin that takes JSON bodies.
  await app.register(registrationRoutes);
  await app.register(userinfoRoutes);
  await app.register(loginRoutes);
  await app.register(connectorRoutes);
  await app.register(secondFactorRoutes);
  await app.register(accountSecurityRoutes);
  await app.register(accountRoutes);
  await app.register(adminRoutes);
  // The management API (JSON, problem details, tokens for {issuer}/api/v1): one scope, its resources inside.
  await app.register(
    async (api) => {
      prepareManagementScope(api);
      await api.register(managementClientRoutes);
      await api.register(managementApiRoutes);
      await api.register(managementUserRoutes);
      await api.register(managementConnectorRoutes);
      await api.register(managementKeyRoutes);
      await api.register(managementSessionRoutes);
      await api.register(managementAuditEventRoutes);
      await api.register(managementRoleRoutes);
      await api.register(managementOpenApiRoutes);
    },
    { prefix: '/api/v1' },
  );
  await app.register(passwordResetRoutes);
  await app.register(logoutRoutes);
  await app.register(deviceVerificationRoutes);
  await app.register(authorizeRoutes);
  return app;
}

/** Fastify takes a hop count as a function of the hop index. */
function trustProxyOption(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust;
}

/** Seconds a client is asked to wait when the database is away (Retry-After, RFC 9110 §10.2.3). */
export const unavailableRetryAfterSeconds = 2;

/**
 * Turns anything thrown into an OAuthError: ours as is, framework 4xx and zod as invalid_request, a
 * database that is away or too slow as 503 temporarily_unavailable (RFC 6749 §4.1.2.1 names the
 * code; the status and Retry-After are HTTP's for a passing outage).
 */
export function toOAuthError(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error;
  if (isStoreUnavailable(error)) {
    return new OAuthError('temporarily_unavailable', 'The service is briefly unavailable. Try again in a moment.', {
      status: 503,
      detail: errorMessage(error),
      headers: { 'retry-after': String(unavailableRetryAfterSeconds) },
    });
  }
  if (error instanceof ZodError) {
    return new OAuthError('invalid_request', 'The request is malformed.', { detail: error.message });
  }
  const fastifyError = error as Partial<FastifyError>;
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    switch (fastifyError.code) {
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return new OAuthError('invalid_request', 'The request body must be application/x-www-form-urlencoded.', { detail: fastifyError.message ?? '' });
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return new OAuthError('invalid_request', 'The request body is too large.', { status: 413 });
      default:
        return new OAuthError('invalid_request', 'The request is malformed.', { status: status === 404 ? 400 : status, detail: fastifyError.message ?? '' });
    }
  }
  return new OAuthError('server_error', 'The server could not handle the request.', { detail: errorMessage(error) });
}

/** The page for an error; `t` puts a message with a number into the page's language (renderPage does the rest). */
function pageFor(error: OAuthError, t: Translator['t']): ErrorPage {
  if (error.status === 429) {
    const minutes = Math.max(1, Math.ceil(Number(error.headers['retry-after'] ?? 60) / 60));
    return {
      heading: 'Too many attempts',
      message: minutes === 1 ? 'Please wait 1 minute and try again.' : t('Please wait {minutes} minutes and try again.', { minutes }),
    };
  }
  if (error.status === 503) return { heading: 'Briefly unavailable', message: 'The service is busy or restarting. Please try again in a moment.' };
  if (error.status >= 500) return { heading: 'Something went wrong', message: 'We could not finish that. Please try again in a moment.' };
  return { heading: 'That did not work', message: error.description };
}

/**
 * Not an async function: an OAuth error answer (every pending poll's) is sent here and now, and
 * nothing is returned for Fastify to await; only a page, rendered asynchronously, returns its promise.
 */
function errorHandler(services: Services) {
  return function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): Promise<unknown> | undefined {
    const oauthError = toOAuthError(error);
    if (oauthError.status === 429) services.metrics.rateLimitHits.inc({ route: request.routeOptions.url ?? 'unmatched' });
    // A database outage is one cause behind many requests: one line each, without a stack.
    if (isStoreUnavailable(error))
      request.log.warn({ event: 'database.unavailable', detail: oauthError.detail }, 'request failed: the database is unavailable');
    else if (oauthError.status >= 500) request.log.error({ err: error, detail: oauthError.detail }, 'request failed');
    else noteRefusal(request, { error: oauthError.code, detail: oauthError.detail });

    reply.headers(oauthError.headers).header('cache-control', 'no-store');
    // Fastify's own getter reads a route context's config as optional (context.config?.url).
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    if (request.routeOptions.config?.page) {
      return renderErrorPage(request, reply, services, pageFor(oauthError, translator(pageLanguage(request)).t), oauthError.status);
    }
    reply.code(oauthError.status).send(oauthError.toJSON());
    return undefined;
  };
}
