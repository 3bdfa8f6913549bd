/**
 * The loopback redirect listener of `latchkey login` (RFC 8252 §7.3): 127.0.0.1 on a free port,
 * one callback on /callback carrying the expected `state`, and a time limit. A request with any
 * other path or state is refused (400/404) and the listener keeps waiting, so another local
 * program or a web page probing ports cannot end or spoil the sign-in. The browser's answer is
 * held until the caller has finished (code exchanged, id_token verified), so it tells the truth.
 *
 * It also takes the one-time start secret that the browser posts from the sign-in page file (see
 * sign_in_page.ts) and answers it, once, with a redirect to the authorization request. Only the
 * secret opens the way: a port is visible to every local account, but the secret travels in no
 * URL and no command line. Presented a second time, two parties had it and there is no telling
 * which was the person, so the sign-in is cancelled.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constantTimeEqual, randomSecret } from '../../crypto/secrets.js';

export interface Callback {
  url: URL;
  /** Answers the waiting browser with the outcome. */
  finish: (ok: boolean) => void;
}

export interface StartForm {
  /** `http://127.0.0.1:<port>/start`: where the form posts; nothing secret. */
  action: string;
  /** The value of the form's one field, `t`. */
  secret: string;
}

export interface CallbackListener {
  redirectUri: string;
  /**
   * Makes the one-time start form: posting `t=<secret>` (256 random bits) to `action` answers once
   * with a 303 to `authorizationUrl`. The secret must reach the browser only through something no
   * other account can read. At most one per listener.
   */
  startForm(authorizationUrl: string): StartForm;
  /** Resolves with the callback carrying the expected state; rejects on timeout, abort or a start secret presented twice. */
  callback: Promise<Callback>;
  /** Whether the start secret was presented twice, which may happen after the callback came. */
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
/** The start secret was presented a second time: someone else may have used it first. */
export class SignInHijacked extends Error {}

/** A start form is one 43-character field; anything much longer is not one. */
const maxStartBody = 1024;

/** The body of a form post, or undefined when it is not a small urlencoded form. */
function readForm(request: IncomingMessage): Promise<URLSearchParams | undefined> {
  const type = ((request.headers['content-type'] ?? '').split(';')[0] ?? '').trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    request.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve) => {
    let body = '';
    request.setEncoding('latin1');
    request.on('data', (chunk: string) => {
      // Past the limit the rest is read and dropped; the answer closes the connection.
      if (body.length <= maxStartBody) body += chunk;
      if (body.length > maxStartBody) resolve(undefined);
    });
    request.on('end', () => resolve(body.length > maxStartBody ? undefined : new URLSearchParams(body)));
    request.on('error', () => resolve(undefined));
  });
}

const headers = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' };

export async function listenForCallback(expectedState: string, timeoutMs: number, signal: AbortSignal): Promise<CallbackListener> {
  let settle: { resolve: (callback: Callback) => void; reject: (err: Error) => void } | undefined;
  const callback = new Promise<Callback>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let accepted = false;
  let start: { secret: string; location: string; used: boolean } | undefined;
  let cancelled = false;
  let signedIn = false;
  const answerStart = (response: ServerResponse, presented: { location: string; used: boolean }) => {
    if (!presented.used) {
      presented.used = true;
      // 303: the browser follows a post with a GET (RFC 9110 §15.4.4). no-referrer: the
      // authorization server need not learn where the browser came from either.
      response.writeHead(303, { location: presented.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' }).end();
      return;
    }
    if (signedIn) {
      // Too late to stop it: say so, rather than claim nothing was saved.
      response
        .writeHead(400, headers)
        .end(
          page(
            'Sign-in page opened twice',
            'This sign-in page was opened twice, after the sign-in had finished. If it was not you who signed in, run latchkey logout and then latchkey login in your terminal.',
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
          'This sign-in page was opened twice, so another program on this computer may have tried to take over the sign-in. Nothing was saved. Run latchkey login again in your terminal.',
        ),
      );
    settle?.reject(new SignInHijacked('the start secret was presented twice'));
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (request.method === 'POST' && url.pathname === '/start' && url.search === '' && start) {
      void readForm(request)
        .then((form) => {
          const fields = form ? [...form.keys()] : [];
          const presented = form && fields.length === 1 && fields[0] === 't' ? (form.get('t') ?? undefined) : undefined;
          if (presented === undefined || !start || !constantTimeEqual(presented, start.secret)) {
            response.writeHead(404, headers).end(page('Not found', 'There is nothing here.'));
            return;
          }
          answerStart(response, start);
        })
        .catch(() => response.destroy());
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
  const startForm = (authorizationUrl: string): StartForm => {
    if (start) throw new Error('a sign-in has one start form');
    start = { secret: randomSecret(), location: authorizationUrl, used: false };
    return { action: `http://127.0.0.1:${port}/start`, secret: start.secret };
  };
  return { redirectUri, startForm, callback, openedTwice: () => cancelled, close };
}
