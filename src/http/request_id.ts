/**
 * Each request's id: what an error page shows, what the `X-Request-Id` response header says, and
 * what every log line of that request carries (pino's `reqId`), so an operator given the id finds
 * the request. Behind a proxy the server trusts (LATCHKEY_TRUST_PROXY), the proxy's own
 * `X-Request-Id` is kept, so its log and ours name a request alike — but only a short id of plain
 * characters: the header is sent by whoever sent the request, and it lands in logs and on pages.
 * Anything else gets a fresh id (a UUIDv7, so ids sort by time).
 */
import type { IncomingMessage } from 'node:http';
import { randomId } from '../crypto/secrets.js';

export const requestIdHeader = 'x-request-id';

/** What a proxy's id may look like (a UUID, nginx's $request_id, a trace id …). */
const saneRequestId = /^[A-Za-z0-9][A-Za-z0-9._:-]{7,63}$/;

/** Fastify's genReqId: the trusted proxy's sane id, or a fresh one. */
export function requestIdGenerator(behindTrustedProxy: boolean): (request: IncomingMessage) => string {
  return (request) => {
    const incoming = request.headers[requestIdHeader];
    if (behindTrustedProxy && typeof incoming === 'string' && saneRequestId.test(incoming)) return incoming;
    return randomId();
  };
}
