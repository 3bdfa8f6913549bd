/**
 * The load generator of the browser sign-in scenario, run as its own process (on the other core):
 * reads a LoadSpec with a sign-in flow from the file named by argv[2]; one simulated browser per
 * account given (at most `connections`) signs in again and again until the time is up, each time
 * as a new browser (no cookies kept): GET /authorize → the sign-in page → POST username and
 * password → GET the authorization request again → the code at the application's redirect → POST
 * /oauth/token with the PKCE verifier. Prints one JSON line of LoadResult: a "request" is one
 * whole sign-in; its status is the token response's, or that of the step that went wrong (counted
 * in `errors` as `<step>:<status>`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { LoadResult, LoadSpec } from './load.js';
import type { SignInFlow } from './scenarios.js';
import type { SignInAccount } from './seed.js';

interface Answer {
  status: number;
  location: string | undefined;
  body: string;
  cookies: string[];
}

/** A step that did not answer as a sign-in should: the whole sign-in counts as failed. */
class StepFailed extends Error {
  constructor(
    readonly step: string,
    readonly status: number,
  ) {
    super(`${step} answered ${status}`);
  }
}

/** One simulated browser's cookie jar, new for each sign-in. */
class Jar {
  private readonly cookies = new Map<string, string>();

  keep(lines: string[]): void {
    for (const line of lines) {
      const pair = line.split(';', 1)[0] ?? '';
      const eq = pair.indexOf('=');
      if (eq > 0) this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
  }

  header(): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  }
}

async function send(base: string, jar: Jar, method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    redirect: 'manual',
    headers: { accept: 'text/html', 'user-agent': 'latchkey-bench', ...jar.header(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
  const cookies = res.headers.getSetCookie();
  jar.keep(cookies);
  return { status: res.status, location: res.headers.get('location') ?? undefined, body: await res.text(), cookies };
}

/** A hidden field of a page, its HTML escapes undone (Eta escapes & < > " '). */
function field(html: string, name: string): string {
  const tag = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(html)?.[0];
  const value = tag ? /value="([^"]*)"/.exec(tag)?.[1] : undefined;
  if (value === undefined) throw new StepFailed(`login_page:no_${name}`, 200);
  return value
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function expectRedirect(step: string, answer: Answer): string {
  if ((answer.status !== 302 && answer.status !== 303) || !answer.location) throw new StepFailed(step, answer.status);
  return answer.location;
}

/** The path and query of a Location that points back at the server. */
function local(base: string, location: string): string {
  const url = new URL(location, base);
  return url.pathname + url.search;
}

async function signIn(base: string, flow: SignInFlow, account: SignInAccount): Promise<void> {
  const jar = new Jar();
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(12).toString('base64url');
  const authorization = new URLSearchParams({
    response_type: 'code',
    client_id: flow.clientId,
    redirect_uri: flow.redirectUri,
    scope: flow.scope,
    state,
    nonce: randomBytes(12).toString('base64url'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const toLogin = expectRedirect('authorize', await send(base, jar, 'GET', `/authorize?${authorization.toString()}`));
  const page = await send(base, jar, 'GET', local(base, toLogin));
  if (page.status !== 200) throw new StepFailed('login_page', page.status);
  const signedIn = await send(base, jar, 'POST', '/login', {
    csrf_token: field(page.body, 'csrf_token'),
    return_to: field(page.body, 'return_to'),
    username: account.username,
    password: account.password,
  });
  const back = expectRedirect('login', signedIn);
  const toClient = new URL(expectRedirect('authorize_after_login', await send(base, jar, 'GET', local(base, back))));
  const code = toClient.searchParams.get('code');
  if (toClient.origin + toClient.pathname !== flow.redirectUri || !code || toClient.searchParams.get('state') !== state) throw new StepFailed('callback', 0);
  const token = await send(base, new Jar(), 'POST', '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: flow.redirectUri,
    client_id: flow.clientId,
    code_verifier: verifier,
  });
  if (token.status !== 200) throw new StepFailed('token', token.status);
  const tokens = JSON.parse(token.body) as { access_token?: unknown; id_token?: unknown };
  if (typeof tokens.access_token !== 'string' || typeof tokens.id_token !== 'string') throw new StepFailed('token:no_tokens', 200);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as LoadSpec & { signIn: SignInFlow };
  const base = new URL(spec.url).origin;
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const latencies: number[] = [];
  let socketErrors = 0;
  const started = performance.now();
  const end = started + spec.durationSeconds * 1000;
  const browser = async (account: SignInAccount) => {
    while (performance.now() < end) {
      const begun = performance.now();
      try {
        await signIn(base, spec.signIn, account);
        statuses['200'] = (statuses['200'] ?? 0) + 1;
        latencies.push(performance.now() - begun);
      } catch (err) {
        if (!(err instanceof StepFailed)) {
          socketErrors++;
          errors['socket'] = (errors['socket'] ?? 0) + 1;
          continue;
        }
        statuses[String(err.status)] = (statuses[String(err.status)] ?? 0) + 1;
        errors[`${err.step}:${err.status}`] = (errors[`${err.step}:${err.status}`] ?? 0) + 1;
      }
    }
  };
  const accounts = spec.signIn.accounts.slice(0, spec.connections);
  await Promise.all(accounts.map(browser));
  const seconds = (performance.now() - started) / 1000;
  const sorted = latencies.sort((a, b) => a - b);
  const total = Object.values(statuses).reduce((a, b) => a + b, 0);
  const output: LoadResult = {
    requests: total,
    // Over the time the browsers really ran (the last sign-in begun before the end finishes after it).
    requestsPerSecond: total / Math.max(seconds, spec.durationSeconds),
    p50Ms: Math.round(percentile(sorted, 50)),
    p99Ms: Math.round(percentile(sorted, 99)),
    maxMs: Math.round(sorted[sorted.length - 1] ?? 0),
    non2xx: total - (statuses['200'] ?? 0),
    socketErrors,
    timeouts: 0,
    statuses,
    errors,
  };
  process.stdout.write(`${JSON.stringify(output)}\n`);
}

await main();
