/**
 * The outbound guard on real sockets: a listener on 127.0.0.1 stands for an internal service and
 * records every request that reaches it. Names are resolved by the system (localhost) or by a DNS
 * function the test hands the guard, which can answer differently each time it is asked.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { outboundFetch, OutboundRefused, OutboundResponseTooLarge, type ResolveHost } from '../../src/net/outbound_guard.js';
import { emptyAllowList, parseOutboundAllowList } from '../../src/net/outbound_policy.js';

let server: Server;
let port: number;
let hits: { method: string; url: string; body: string }[];
let answer: (req: IncomingMessage, res: ServerResponse) => void;

beforeEach(async () => {
  hits = [];
  answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer | string) => (body += d.toString()));
    req.on('end', () => {
      hits.push({ method: req.method ?? '', url: req.url ?? '', body });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterEach(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A DNS that answers from a script, one answer per question (the last one repeated), and counts the questions. */
function scriptedDns(...answers: LookupAddress[][]): ResolveHost & { questions: string[] } {
  const questions: string[] = [];
  const resolve = async (hostname: string) => {
    questions.push(hostname);
    return answers[Math.min(questions.length - 1, answers.length - 1)]!;
  };
  return Object.assign(resolve, { questions });
}
const v4 = (address: string): LookupAddress => ({ address, family: 4 });

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe('the guard refuses internal targets and sends nothing', () => {
  it('a literal loopback address: http://127.0.0.1:<port>/internal-admin/x', async () => {
    const send = outboundFetch({ allow: emptyAllowList });
    const err = await refusal(send(`http://127.0.0.1:${port}/internal-admin/x`, { method: 'POST', body: 'a=b' }));
    expect(err).toBeInstanceOf(OutboundRefused);
    expect((err as Error).message).toBe('outbound request refused: loopback address 127.0.0.1');
    expect(hits).toEqual([]);
  });

  it('IPv4-mapped and numeric spellings of the loopback address', async () => {
    const send = outboundFetch({ allow: emptyAllowList });
    for (const url of [
      `http://[::ffff:127.0.0.1]:${port}/x`,
      `http://0x7f000001:${port}/x`,
      `http://127.1:${port}/x`,
      `http://[::1]:${port}/x`,
      `http://0.0.0.0:${port}/x`,
    ]) {
      expect(await refusal(send(url)), url).toBeInstanceOf(OutboundRefused);
    }
    expect(hits).toEqual([]);
  });

  it('a name the system resolves to loopback (localhost) is refused at connect time', async () => {
    const send = outboundFetch({ allow: emptyAllowList });
    const err = await refusal(send(`http://localhost:${port}/internal-admin/x`));
    expect(err).toBeInstanceOf(OutboundRefused);
    expect((err as Error).message).toMatch(/^outbound request refused: localhost resolves to a loopback address (127\.0\.0\.1|::1)$/);
    expect(hits).toEqual([]);
  });

  it('a name the DNS answers with 127.0.0.1, or with the cloud metadata address', async () => {
    for (const address of ['127.0.0.1', '169.254.169.254', '10.0.0.7']) {
      const dns = scriptedDns([v4(address)]);
      const err = await refusal(outboundFetch({ allow: emptyAllowList, resolve: dns })(`http://jwks.attacker.test:${port}/jwks.json`));
      expect(err).toBeInstanceOf(OutboundRefused);
      expect(dns.questions).toEqual(['jwks.attacker.test']);
    }
    expect(hits).toEqual([]);
  });

  it('an answer mixing a public and an internal address is refused whole', async () => {
    const dns = scriptedDns([v4('93.184.216.34'), v4('127.0.0.1')]);
    const err = await refusal(outboundFetch({ allow: emptyAllowList, resolve: dns })(`http://mixed.attacker.test:${port}/`));
    expect((err as Error).message).toBe('outbound request refused: mixed.attacker.test resolves to a loopback address 127.0.0.1');
    expect(hits).toEqual([]);
  });

  it('DNS rebinding: the address judged is the address connected to — a second answer pointing inside is never asked for', async () => {
    // First answer: an address the allow-list admits, where nothing listens (the connection is refused).
    // Any later answer: 127.0.0.1, where the listener is. A guard that resolved once to check and
    // again to connect would reach the listener.
    const dns = scriptedDns([v4('127.0.0.2')], [v4('127.0.0.1')]);
    const send = outboundFetch({ allow: parseOutboundAllowList('127.0.0.2')!, resolve: dns });
    const err = await refusal(send(`http://rebind.attacker.test:${port}/internal-admin/x`));
    expect((err as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(dns.questions).toEqual(['rebind.attacker.test']);
    expect(hits).toEqual([]);
  });

  it('schemes other than http and https', async () => {
    const send = outboundFetch({ allow: undefined });
    expect(await refusal(send('file:///etc/passwd'))).toBeInstanceOf(OutboundRefused);
    expect(await refusal(send(`ftp://127.0.0.1:${port}/`))).toBeInstanceOf(OutboundRefused);
  });
});

describe('what may pass', () => {
  it('a host on the allow-list reaches its internal address, by the name it was listed under', async () => {
    const dns = scriptedDns([v4('127.0.0.1')]);
    const send = outboundFetch({ allow: parseOutboundAllowList('jwks.corp.test')!, resolve: dns });
    const res = await send(`http://JWKS.corp.test:${port}/keys`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(hits.map((h) => h.url)).toEqual(['/keys']);
    // Another name resolving to the same address is not on the list.
    const other = outboundFetch({ allow: parseOutboundAllowList('jwks.corp.test')!, resolve: scriptedDns([v4('127.0.0.1')]) });
    expect(await refusal(other(`http://other.corp.test:${port}/keys`))).toBeInstanceOf(OutboundRefused);
    expect(hits).toHaveLength(1);
  });

  it('an address in an allow-listed block, written as an address or reached by name', async () => {
    const allow = parseOutboundAllowList('127.0.0.0/30')!;
    expect((await outboundFetch({ allow })(`http://127.0.0.1:${port}/a`)).status).toBe(200);
    expect((await outboundFetch({ allow, resolve: scriptedDns([v4('127.0.0.1')]) })(`http://svc.corp.test:${port}/b`)).status).toBe(200);
    expect(hits.map((h) => h.url)).toEqual(['/a', '/b']);
  });

  it('with no allow-list to apply (a target the operator chose), any address', async () => {
    const res = await outboundFetch({ allow: undefined })(`http://127.0.0.1:${port}/backchannel`, {
      method: 'POST',
      body: new URLSearchParams({ logout_token: 't' }),
    });
    expect(res.status).toBe(200);
    expect(hits).toEqual([{ method: 'POST', url: '/backchannel', body: 'logout_token=t' }]);
  });
});

describe('redirects, deadlines and size', () => {
  it('a redirect is returned as it is, never followed', async () => {
    answer = (_req, res) => res.writeHead(302, { location: `http://127.0.0.1:${port}/internal-admin/x` }).end();
    const res = await outboundFetch({ allow: parseOutboundAllowList('127.0.0.1')! })(`http://127.0.0.1:${port}/jwks.json`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`http://127.0.0.1:${port}/internal-admin/x`);
    expect(hits.map((h) => h.url)).toEqual(['/jwks.json']);
  });

  it('an answer over the cap is dropped, whether announced by its length or streamed', async () => {
    const send = outboundFetch({ allow: undefined, maxResponseBytes: 1024 });
    answer = (_req, res) => res.writeHead(200, { 'content-length': '4096' }).end('x'.repeat(4096));
    expect(await refusal(send(`http://127.0.0.1:${port}/announced`))).toBeInstanceOf(OutboundResponseTooLarge);
    answer = (_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 8; i++) res.write('y'.repeat(512));
      res.end();
    };
    expect(await refusal(send(`http://127.0.0.1:${port}/streamed`))).toBeInstanceOf(OutboundResponseTooLarge);
    answer = (_req, res) => res.writeHead(200).end('z'.repeat(1024));
    expect(await (await send(`http://127.0.0.1:${port}/at-the-cap`)).text()).toHaveLength(1024);
  });

  it('a server that never answers is given up on at the deadline', async () => {
    answer = () => undefined;
    const err = await refusal(outboundFetch({ allow: undefined, timeoutMs: 300 })(`http://127.0.0.1:${port}/slow`));
    expect((err as Error).name).toBe('TimeoutError');
    expect(hits).toHaveLength(1);
  });

  it("the caller's own signal ends the request too", async () => {
    answer = () => undefined;
    const controller = new AbortController();
    const pending = refusal(outboundFetch({ allow: undefined })(`http://127.0.0.1:${port}/slow`, { signal: controller.signal }));
    await new Promise<void>((resolve) => {
      const check = () => (hits.length > 0 ? resolve() : setImmediate(check));
      check();
    });
    controller.abort();
    expect(((await pending) as Error).name).toBe('AbortError');
  });
});
