/**
 * The loopback redirect listener of `latchkey login` (RFC 8252 §7.3): 127.0.0.1 on a free port,
 * one callback on /callback carrying the expected `state`, and a time limit. A request with any
 * other path or state is refused (400/404) and the listener keeps waiting, so another local
 * program or a web page probing ports cannot end or spoil the sign-in. The browser's answer is
 * held until the caller has finished (code exchanged, id_token verified), so it tells the truth.
 *
 * It also serves the one-time start address given to the browser command in place of the
 * authorization request, since a command line is readable by every local account
 * (/proc/PID/cmdline). The start address redirects once; opened a second time, two parties raced
 * for it and there is no telling which was the person, so the sign-in is cancelled.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constantTimeEqual, randomSecret } from '../../crypto/secrets.js';

export interface Callback {
  url: URL;
  /** Answers the waiting browser with the outcome. */
  finish(ok: boolean): void;
}

export interface CallbackListener {
  redirectUri: string;
  /**
   * Returns `http://127.0.0.1:<port>/start?t=<256 random bits>`, which redirects once to
   * `authorizationUrl`: safe to put on a command line. At most one per listener.
   */
  startAddress(authorizationUrl: string): string;
  /** Resolves with the callback carrying the expected state; rejects on timeout, abort or a start address opened twice. */
  callback: Promise<Callback>;
  /** Whether the start address was opened twice, which may happen after the callback came. */
  openedTwice(): boolean;
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
/** The start address was opened a second time: someone else may have used it first. */
export class SignInHijacked extends Error {}

const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' };

export async function listenForCallback(expectedState: string, timeoutMs: number, signal: AbortSignal): Promise<CallbackListener> {
  let settle: { resolve: (callback: Callback) => void; reject: (err: Error) => void } | undefined;
  const callback = new Promise<Callback>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let accepted = false;
  let start: { token: string; location: string; used: boolean } | undefined;
  let cancelled = false;
  let signedIn = false;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method === 'GET' && url.pathname === '/start' && start && constantTimeEqual(url.searchParams.get('t') ?? '', start.token)) {
      if (!start.used) {
        start.used = true;
        // no-referrer: the authorization server need not learn the start address either.
        response.writeHead(302, { location: start.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' }).end();
        return;
      }
      if (signedIn) {
        // Too late to stop it: say so, rather than claim nothing was saved.
        response
          .writeHead(400, headers)
          .end(
            page(
              'Sign-in address opened twice',
              'This sign-in address was opened twice, after the sign-in had finished. If it was not you who signed in, run latchkey logout and then latchkey login in your terminal.',
            ),
          );
        return;
      }
      // Whoever came first got the authorization request and may be signing in as themselves, so
      // no callback is taken any more, whichever of the two it comes from.
      cancelled = true;
      response
        .writeHead(400, headers)
        .end(
          page(
            'Sign-in cancelled',
            'This sign-in address was opened twice, so another program on this computer may have tried to take over the sign-in. Nothing was saved. Run latchkey login again in your terminal.',
          ),
        );
      settle?.reject(new SignInHijacked('the start address was opened twice'));
      return;
    }
    if (request.method !== 'GET' || url.pathname !== '/callback' || accepted) {
      response.writeHead(404, headers).end(page('Not found', 'There is nothing here.'));
      return;
    }
    if (cancelled) {
      response.writeHead(400, headers).end(page('Sign-in cancelled', 'This sign-in was cancelled in your terminal. Nothing was saved.'));
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
        signedIn = ok;
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
  const startAddress = (authorizationUrl: string) => {
    if (start) throw new Error('a sign-in has one start address');
    start = { token: randomSecret(), location: authorizationUrl, used: false };
    return `http://127.0.0.1:${port}/start?t=${start.token}`;
  };
  return { redirectUri, startAddress, callback, openedTwice: () => cancelled, close };
}
