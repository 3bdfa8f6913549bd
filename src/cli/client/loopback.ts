/**
 * The loopback redirect listener of `latchkey login` (RFC 8252 §7.3): 127.0.0.1 on a free port,
 * one callback on /callback carrying the expected `state`, and a time limit. A request with any
 * other path or state is refused (400/404) and the listener keeps waiting, so another local
 * program or a web page probing ports cannot end or spoil the sign-in. The browser's answer is
 * held until the caller has finished (code exchanged, id_token verified), so it tells the truth.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Callback {
  url: URL;
  /** Answers the waiting browser with the outcome. */
  finish(ok: boolean): void;
}

export interface CallbackListener {
  redirectUri: string;
  /** Resolves with the callback carrying the expected state, or rejects on timeout or abort. */
  callback: Promise<Callback>;
  close(): void;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;display:flex;min-height:90vh;align-items:center;` +
  `justify-content:center;color:#1b1d21;background:#f4f5f7}main{background:#fff;border:1px solid #d6d9df;border-radius:12px;` +
  `padding:2rem;max-width:26rem}h1{font-size:1.4rem;margin:0 0 .5rem}</style></head>` +
  `<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></main></body></html>`;

export class SignInTimeout extends Error {}
export class SignInAborted extends Error {}

const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' };

export async function listenForCallback(expectedState: string, timeoutMs: number, signal: AbortSignal): Promise<CallbackListener> {
  let settle: { resolve: (callback: Callback) => void; reject: (err: Error) => void } | undefined;
  const callback = new Promise<Callback>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let accepted = false;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method !== 'GET' || url.pathname !== '/callback' || accepted) {
      response.writeHead(404, headers).end(page('Not found', 'There is nothing here.'));
      return;
    }
    if (url.searchParams.get('state') !== expectedState) {
      response.writeHead(400, headers).end(page('Not this sign-in', 'This answer does not belong to the sign-in your terminal is waiting for.'));
      return;
    }
    accepted = true;
    settle?.resolve({
      url: new URL(`${redirectUri}${url.search}`),
      finish(ok) {
        response
          .writeHead(ok ? 200 : 400, headers)
          .end(
            ok
              ? page('Signed in — you can close this tab', 'Return to your terminal to continue.')
              : page('Sign-in failed', 'Latchkey could not sign you in. Return to your terminal for details.'),
          );
      },
    });
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
    server.close();
    server.closeAllConnections();
  };
  return { redirectUri, callback, close };
}
