/**
 * What every route under /api/v1 shares, set on the encapsulated Fastify instance the routes are
 * registered in: JSON bodies (the rest of the server takes forms only), RFC 9457 problem answers
 * for every refusal including unknown paths, no caching of answers, and no CORS — the API is for
 * automation, not for code in a browser, so no Access-Control-* header is ever sent.
 */
import type { FastifyInstance } from 'fastify';
import { noteRefusal } from '../http/access_log.js';
import { Problem, problemContentType, toProblem } from './problem.js';

export function prepareManagementScope(app: FastifyInstance): void {
  app.decorate('managementOperations', []);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    if (text === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(new Problem(400, 'malformed', 'The request body is not valid JSON.'), undefined);
    }
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    done(null, payload);
  });
  app.setErrorHandler((error, request, reply) => {
    const problem = toProblem(error);
    if (problem.status >= 500) request.log.error({ err: error }, 'management API request failed');
    else noteRefusal(request, { error: problem.kind, detail: problem.detail });
    void reply.code(problem.status).headers(problem.headers).type(problemContentType).send(problem.body());
  });
  app.setNotFoundHandler((_request, reply) => {
    void reply
      .code(404)
      .type(problemContentType)
      .send(new Problem(404, 'not-found', 'There is no such operation in this API.').body());
  });
}

/** Whether a request's URL is under /api/v1 (the framework's own refusals answer problems there too). */
export function isManagementPath(url: string): boolean {
  return url === '/api/v1' || url.startsWith('/api/v1/') || url.startsWith('/api/v1?');
}

/**
 * The problem for a request Fastify refuses before any route of the API runs (a path whose
 * percent-encoding is broken, a parameter longer than the router takes), with the status it chose.
 */
export function frameworkProblem(status: number): { status: number; contentType: string; body: ReturnType<Problem['body']> } {
  const problem = status === 414 ? new Problem(414, 'too-long', 'The request URL is too long.') : new Problem(status, 'malformed', 'The request is malformed.');
  return { status: problem.status, contentType: problemContentType, body: problem.body() };
}
