/**
 * The one way the server sends a request to an address someone else chose (a client's back-channel
 * logout URI, its jwks_uri): a fetch-shaped function over node:http(s) that checks the address it
 * is about to connect to, not the name. The check runs inside the socket's own DNS lookup, so the
 * addresses judged are the addresses connected to: a name that answers a public address to a
 * first lookup and 127.0.0.1 to a second (DNS rebinding) gets no second lookup to exploit. An
 * answer holding any refused address is refused whole. A host written as an IP address is judged
 * as written (a socket does not look those up). Redirects are never followed (the 3xx answer is
 * returned as it is); every request has a deadline, and an answer larger than the cap is dropped.
 */
import type { LookupAddress } from 'node:dns';
import { lookup as systemLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { parseIp } from './ip_address.js';
import { addressRefusal, normalHost, type OutboundAllowList } from './outbound_policy.js';

/** Resolves a host name to every address it has (tests inject their own DNS). */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export interface OutboundOptions {
  /** The addresses beyond public ones that may be reached; undefined checks nothing (targets the operator chose). */
  allow: OutboundAllowList | undefined;
  resolve?: ResolveHost;
  /** One deadline for the whole exchange: lookup, connect, request and answer. */
  timeoutMs?: number;
  /** The most the answer's body may hold. */
  maxResponseBytes?: number;
}

export interface OutboundInit {
  method?: string;
  headers?: ConstructorParameters<typeof Headers>[0];
  body?: string | URLSearchParams;
  signal?: AbortSignal;
  /** Accepted for fetch compatibility; redirects are never followed whatever it says. */
  redirect?: string;
}

/** Fetch-shaped: an answer of any status, its body already read (at most the cap). */
export type OutboundFetch = (url: string | URL, init?: OutboundInit) => Promise<Response>;

/** A request that was not sent because of where it would go. */
export class OutboundRefused extends Error {
  readonly code = 'ERR_OUTBOUND_REFUSED';
  constructor(reason: string) {
    super(`outbound request refused: ${reason}`);
    this.name = 'OutboundRefused';
  }
}

/** An answer larger than the cap, dropped unread. */
export class OutboundResponseTooLarge extends Error {
  readonly code = 'ERR_OUTBOUND_RESPONSE_TOO_LARGE';
  constructor(limit: number) {
    super(`outbound response larger than ${limit} bytes`);
    this.name = 'OutboundResponseTooLarge';
  }
}

export const defaultOutboundTimeoutMs = 5000;
/** Room for a JWK Set of 20 keys with certificate chains; a logout answer needs none of it. */
export const defaultMaxResponseBytes = 256 * 1024;

const resolveAll: ResolveHost = (hostname) => systemLookup(hostname, { all: true });

/** Statuses whose answers have no body (the Response constructor refuses one). */
const nullBodyStatuses = new Set([204, 205, 304]);

/**
 * The socket's lookup: every address the name has is resolved, each is judged, and only then are
 * they handed to the socket — which connects to one of exactly these.
 */
function checkedLookup(hostname: string, resolve: ResolveHost, allow: OutboundAllowList | undefined): LookupFunction {
  return (name, options, callback) => {
    resolve(name).then(
      (answers) => {
        const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        const usable = answers.filter((a) => family === 0 || a.family === family);
        const [first] = usable;
        if (first === undefined) {
          callback(Object.assign(new Error(`no address for ${name.slice(0, 253)}`), { code: 'ENOTFOUND' }), '');
          return;
        }
        if (allow !== undefined) {
          for (const answer of answers) {
            const refusal = addressRefusal(hostname, answer.address, allow);
            if (refusal !== undefined) {
              callback(new OutboundRefused(`${normalHost(hostname).slice(0, 253)} resolves to a ${refusal}`), '');
              return;
            }
          }
        }
        if (options.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, ''),
    );
  };
}

function responseOf(res: IncomingMessage, body: Buffer): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) throw new Error(`unusable HTTP status ${status}`);
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers.append(res.rawHeaders[i] ?? '', res.rawHeaders[i + 1] ?? '');
  return new Response(nullBodyStatuses.has(status) ? null : Uint8Array.from(body), { status, statusText: res.statusMessage ?? '', headers });
}

/** A fetch for addresses someone else chose, under the given checks. */
export function outboundFetch(options: OutboundOptions): OutboundFetch {
  const timeoutMs = options.timeoutMs ?? defaultOutboundTimeoutMs;
  const maxBytes = options.maxResponseBytes ?? defaultMaxResponseBytes;
  const resolve = options.resolve ?? resolveAll;
  const { allow } = options;

  return async (target, init = {}) => {
    const url = new URL(target);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused(`${url.protocol} is not http or https`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (parseIp(host) !== undefined) {
      const refusal = allow === undefined ? undefined : addressRefusal(host, host, allow);
      if (refusal !== undefined) throw new OutboundRefused(refusal);
    }
    const lookup = checkedLookup(url.hostname, resolve, allow);

    const headers = new Headers(init.headers);
    const body = init.body === undefined ? undefined : Buffer.from(init.body.toString());
    if (init.body instanceof URLSearchParams && !headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    if (body !== undefined) headers.set('content-length', String(body.length));
    const outgoing: Record<string, string> = {};
    headers.forEach((value, name) => {
      outgoing[name] = value;
    });
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = init.signal === undefined ? deadline : AbortSignal.any([deadline, init.signal]);
    signal.throwIfAborted();

    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolvePromise, reject) => {
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        outcome();
      };
      const fail = (err: unknown) => settle(() => reject(err));
      const onAbort = () => {
        fail(signal.reason);
        request.destroy();
      };
      // A fresh connection (agent: false) per request: no pooled socket skips the lookup's check.
      const request = send(url, { method: init.method ?? 'GET', headers: outgoing, lookup, agent: false }, (res) => {
        if (Number(res.headers['content-length']) > maxBytes) {
          fail(new OutboundResponseTooLarge(maxBytes));
          res.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            fail(new OutboundResponseTooLarge(maxBytes));
            res.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          try {
            const response = responseOf(res, Buffer.concat(chunks));
            settle(() => resolvePromise(response));
          } catch (err) {
            fail(err);
          }
        });
        res.on('error', fail);
        res.on('close', () => {
          if (!res.complete) fail(new Error('outbound response cut off'));
        });
      });
      signal.addEventListener('abort', onAbort, { once: true });
      request.on('error', fail);
      request.end(body);
    });
  };
}
