/**
 * One log line per request instead of Fastify's two ("incoming request", "request completed"),
 * with what an operator reads: method, path (never the query: user codes travel there), status,
 * time, address and, for refusals, the OAuth error and why. The error handler leaves the refusal
 * on the request; nothing else logs a routine 4xx.
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { pathOnly } from '../logging.js';

export interface Refusal {
  error: string;
  detail: string | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Why the request was refused, for its log line (set by the error handler). */
    refusal: Refusal | undefined;
  }
}

export function noteRefusal(request: FastifyRequest, refusal: Refusal): void {
  request.refusal = refusal;
}

export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const refusal = request.refusal;
    const line = {
      method: request.method,
      url: pathOnly(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ip: request.ip,
      ...(refusal ? { error: refusal.error, ...(refusal.detail ? { detail: refusal.detail } : {}) } : {}),
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request');
  }
}
