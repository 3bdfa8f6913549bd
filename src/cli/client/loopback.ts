/**
 * The loopback redirect listener of `latchkey login` (RFC 8252 §7.3): 127.0.0.1 on a free port,
 * exactly one callback on /callback, a small page for the browser, and a time limit. Anything
 * else (other paths, a second callback) is answered 404 and ignored.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CallbackListener {
  redirectUri: string;
  /** Resolves with the full callback URL, or rejects on timeout or abort. */
  callback: Promise<URL>;
  close(): void;
}

const page = (title: string, message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>${title}</title><style>body{font-family:system-ui,sans-serif;display:flex;min-height:90vh;align-items:center;` +
  `justify-content:center;color:#1b1d21;background:#f4f5f7}main{background:#fff;border:1px solid #d6d9df;border-radius:12px;` +
  `padding:2rem;max-width:26rem}h1{font-size:1.4rem;margin:0 0 .5rem}</style></head>` +
  `<body><main><h1>${title}</h1><p>${message}</p></main></body></html>`;

export class SignInTimeout extends Error {}
export class SignInAborted extends Error {}

export async function listenForCallback(timeoutMs: number, signal: AbortSignal): Promise<CallbackListener> {
  let settle: { resolve: (url: URL) => void; reject: (err: Error) => void } | undefined;
  const callback = new Promise<URL>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let done = false;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', `http://127.0.0.1`);
    const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' };
    if (request.method !== 'GET' || url.pathname !== '/callback' || done) {
      response.writeHead(404, headers).end(page('Not found', 'There is nothing here.'));
      return;
    }
    done = true;
    const failed = url.searchParams.get('error');
    response
      .writeHead(200, headers)
      .end(
        failed
          ? page('Sign-in failed', 'Latchkey could not sign you in. Return to your terminal for details.')
          : page('Signed in — you can close this tab', 'Return to your terminal to continue.'),
      );
    settle?.resolve(new URL(`${redirectUri}${url.search}`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const redirectUri = `http://127.0.0.1:${port}/callback`;
  const timer = setTimeout(() => settle?.reject(new SignInTimeout('timed out')), timeoutMs);
  const onAbort = () => settle?.reject(new SignInAborted('aborted'));
  signal.addEventListener('abort', onAbort, { once: true });
  const close = () => {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    server.closeAllConnections();
    server.close();
  };
  return { redirectUri, callback, close };
}
