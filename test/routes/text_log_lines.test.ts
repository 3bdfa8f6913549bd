/**
 * The server's log for a person (LATCHKEY_LOG_FORMAT=text: each JSON line as the server's text
 * stream writes it, logging.ts humanLogLine), read by a strict logfmt reader: a hostile request —
 * its path, a header the refusal quotes — is a value of the fields it belongs to and never adds one.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { humanLogLine } from '../../src/logging.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { parseTextLogLine } from '../helpers/logfmt.js';

let t: TestApp;
let lines: string[];

beforeEach(async () => {
  lines = [];
  t = await testApp({}, { logLines: lines });
});
afterEach(() => t.close());

/** The text line of the request `send` makes, once it is logged (the access log writes when the answer is sent). */
async function requestLine<T>(send: () => Promise<T>) {
  const waiting = lines.length;
  const answer = await send();
  const seen = new Promise<string>((resolve) => {
    const check = () => {
      const line = lines.slice(waiting).find((l) => (JSON.parse(l) as { msg?: string }).msg === 'request');
      if (line === undefined) setImmediate(check);
      else resolve(line);
    };
    check();
  });
  return { answer, line: parseTextLogLine(humanLogLine(await seen)) };
}

describe('text log lines (LATCHKEY_LOG_FORMAT=text)', () => {
  it('a hostile path is the url and adds no field', async () => {
    for (const path of ['/x=1', '/nope%20status=200%20ip=6.6.6.6', '/a=b"c', '/login?status=200 ip=6.6.6.6']) {
      const { answer: res, line } = await requestLine(() => t.app.inject({ method: 'GET', url: path }));
      const fields = Object.fromEntries(line.fields);
      expect(
        line.fields.map(([key]) => key),
        path,
      ).toEqual(['reqId', 'method', 'url', 'status', 'ms', 'ip']);
      expect(fields.status).toBe(String(res.statusCode));
      expect(fields.ip).toBe('127.0.0.1');
      expect(fields.url).not.toContain('?');
      expect(fields.url?.startsWith(path.split('?')[0]!.replace('"', '%22'))).toBe(true);
    }
  });

  it("a refusal's reason is one value, however many words it has", async () => {
    const { line } = await requestLine(() =>
      t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'text/plain; status=200' }, payload: 'x' }),
    );
    expect(line.fields.map(([key]) => key)).toEqual(['reqId', 'method', 'url', 'status', 'ms', 'ip', 'error', 'detail']);
    expect(Object.fromEntries(line.fields)).toMatchObject({ status: '400', error: 'invalid_request', detail: 'Unsupported Media Type' });
  });
});
