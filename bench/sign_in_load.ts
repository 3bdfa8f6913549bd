/**
 * The load generator of the browser sign-in scenarios, run as its own process (on the other core):
 * reads a LoadSpec with a sign-in flow from the file named by argv[2]; one simulated browser per
 * account given (at most `connections`) signs in again and again until the time is up, each time
 * as a new browser (no cookies kept): GET /authorize → the sign-in page → POST username and
 * password → GET the authorization request again → the code at the application's redirect → POST
 * /oauth/token with the PKCE verifier. Prints one JSON line of LoadResult: a "request" is one
 * whole sign-in; its status is the token response's, or that of the step that went wrong (counted
 * in `errors` as `<step>:<status>`).
 *
 * With a TOTP second step, POST /login leads to the second-factor page: its form is read and the
 * code of the current step, computed from the account's secret as an authenticator app does, is
 * posted before the authorization request is taken up again. The browsers take turns with a pool
 * of accounts: the server accepts a code once per account and step (RFC 6238 §5.2), so an account
 * signs in again only in a later step. Should every idle account have signed in within the current
 * step, a browser waits for the next one and the wait is counted (`waited_for_totp_step` in
 * `errors`): the pool was too small and the rate is understated.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
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

/** A hidden field of a page (or form), its HTML escapes undone (Eta escapes & < > " '). */
function field(html: string, name: string, step = 'login_page'): string {
  const tag = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(html)?.[0];
  const value = tag ? /value="([^"]*)"/.exec(tag)?.[1] : undefined;
  if (value === undefined) throw new StepFailed(`${step}:no_${name}`, 200);
  return value
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The form of a page that posts to `action` (the second-factor page may also hold a passkey's form). */
function form(html: string, action: string, step: string): string {
  const found = new RegExp(`<form[^>]*action="${action}"[^>]*>([\\s\\S]*?)</form>`).exec(html)?.[1];
  if (found === undefined) throw new StepFailed(`${step}:no_form`, 200);
  return found;
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

/** RFC 4648 base32 (the alphabet authenticator apps read secrets in), without padding. */
function base32Bytes(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const index = alphabet.indexOf(char);
    if (index < 0) throw new Error('a TOTP secret that is not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >>> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

const totpStepSeconds = 30;
const totpDigits = 6;

/** The 30 s time step of now (RFC 6238 §4: T0 = 0, X = 30), by the clock the server reads too. */
function currentTotpStep(): number {
  return Math.floor(Date.now() / 1000 / totpStepSeconds);
}

/** The code of `step` (RFC 6238 with HMAC-SHA1, 6 digits: HOTP of RFC 4226 §5.3 over the step number). */
function totpCode(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', secret).update(counter).digest();
  const offset = (mac[mac.length - 1] ?? 0) & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** totpDigits).padStart(totpDigits, '0');
}

/** An account as a browser of the pool holds it: with its secret decoded, and the last step it presented a code of. */
interface PooledAccount {
  account: SignInAccount;
  secret: Buffer | undefined;
  lastStep: number;
}

/**
 * The accounts the browsers take turns with: a browser takes one that has not presented a code in
 * the current step, and gives it back after its sign-in. A code is only ever computed for a step
 * later than the account's last one, so the server never sees a replay from the bench.
 */
class AccountPool {
  private readonly idle: PooledAccount[];
  /** How often a browser found every idle account spent for the current step and waited for the next. */
  waits = 0;

  constructor(accounts: SignInAccount[]) {
    this.idle = accounts.map(pooled);
  }

  /** An account free to sign in now, or undefined when the time is up before one is. */
  async take(end: number): Promise<PooledAccount | undefined> {
    while (performance.now() < end) {
      const step = currentTotpStep();
      const index = this.idle.findIndex((entry) => entry.lastStep < step);
      if (index >= 0) return this.idle.splice(index, 1)[0];
      const untilNextStep = (step + 1) * totpStepSeconds * 1000 - Date.now();
      if (untilNextStep <= 0) continue;
      this.waits++;
      await new Promise((resolve) => setTimeout(resolve, Math.min(untilNextStep, end - performance.now())));
    }
    return undefined;
  }

  give(entry: PooledAccount): void {
    this.idle.push(entry);
  }
}

function pooled(account: SignInAccount): PooledAccount {
  return { account, secret: account.totpSecret === undefined ? undefined : base32Bytes(account.totpSecret), lastStep: -1 };
}

/** The second-factor page after the password: its form read, the current code posted; where it leads next. */
async function secondStep(base: string, jar: Jar, location: string, pooled: PooledAccount): Promise<string> {
  const path = local(base, location);
  if (!path.startsWith('/login/second-factor?')) throw new StepFailed('login:no_second_factor', 303);
  const page = await send(base, jar, 'GET', path);
  if (page.status !== 200) throw new StepFailed('second_factor_page', page.status);
  const fields = form(page.body, '/login/second-factor', 'second_factor_page');
  if (pooled.secret === undefined) throw new StepFailed('second_factor:no_secret', 0);
  // The code of the step it is now, and never of a step this account presented a code of already.
  const step = currentTotpStep();
  if (step <= pooled.lastStep) throw new StepFailed('second_factor:step_used', 0);
  pooled.lastStep = step;
  const answer = await send(base, jar, 'POST', '/login/second-factor', {
    csrf_token: field(fields, 'csrf_token', 'second_factor_page'),
    return_to: field(fields, 'return_to', 'second_factor_page'),
    otp: totpCode(pooled.secret, step),
  });
  return expectRedirect('second_factor', answer);
}

async function signIn(base: string, flow: SignInFlow, pooled: PooledAccount): Promise<void> {
  const { account } = pooled;
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
  const afterPassword = expectRedirect('login', signedIn);
  const back = flow.secondFactor === 'totp' ? await secondStep(base, jar, afterPassword, pooled) : afterPassword;
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
  const browser = async (next: () => Promise<PooledAccount | undefined>, done: (pooled: PooledAccount) => void) => {
    while (performance.now() < end) {
      const pooled = await next();
      if (pooled === undefined) break;
      const begun = performance.now();
      try {
        await signIn(base, spec.signIn, pooled);
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
      } finally {
        done(pooled);
      }
    }
  };
  if (spec.signIn.secondFactor === 'totp') {
    // Browsers take turns with a pool of accounts (see AccountPool).
    const pool = new AccountPool(spec.signIn.accounts);
    const browsers = Math.min(spec.connections, spec.signIn.browsers ?? spec.signIn.accounts.length, spec.signIn.accounts.length);
    await Promise.all(
      Array.from({ length: browsers }, () =>
        browser(
          () => pool.take(end),
          (pooled) => pool.give(pooled),
        ),
      ),
    );
    if (pool.waits > 0) {
      errors['waited_for_totp_step'] = pool.waits;
      process.stderr.write(
        `sign_in_load: every account had signed in within the current TOTP step ${pool.waits} times (too few accounts: the rate is understated)\n`,
      );
    }
  } else {
    // One account per browser, its own throughout.
    const own = spec.signIn.accounts.slice(0, spec.connections).map(pooled);
    await Promise.all(
      own.map((account) =>
        browser(
          async () => account,
          () => {},
        ),
      ),
    );
  }
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
