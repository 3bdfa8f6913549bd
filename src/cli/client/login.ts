/**
 * `latchkey login`: the Authorization Code flow with PKCE, state and nonce through a loopback
 * listener and the default browser, or with --device the Device Code flow for machines without
 * one. The tokens are stored for the profile; the id_token is verified by openid-client. The
 * browser is started with the address of a page file only this account can read, never with the
 * request or anything else that would let another account start or finish the sign-in
 * (sign_in_page.ts, loopback.ts).
 */
import { managementAudience, managementScopes } from '../../management/management_api.js';
import { homedir } from 'node:os';
import QRCode from 'qrcode';
import { epochSeconds, systemClock } from '../../clock.js';
import { isIssuerUrl, loadClientConfig } from '../../config.js';
import { z } from 'zod';
import { CommandError, exitCodes, defineCommand, type CommandContext } from '../command.js';
import { openBrowser } from './browser.js';
import { CredentialsStore, type Profile } from './credentials.js';
import { clientHelp } from './help.js';
import { pollForTokens } from './device_poll.js';
import { listenForCallback, SignInAborted, SignInHijacked, SignInTimeout, type Callback } from './loopback.js';
import { writeSignInPage, type SignInPage } from './sign_in_page.js';
import { explainClientError } from './client_errors.js';
import { discover, oidc, printable } from './oidc.js';
import { loginCommandLine, shellWord } from './sign_in_hint.js';
import { visible } from '../terminal_text.js';
import { dpopHandle, dpopProof, newDpopKey } from './dpop_key.js';
import { tokenTypeName } from './session.js';
import type { JWK } from 'jose';

const defaultScope = 'openid email profile offline_access';

/** What a device-flow token answer must hold before anything is stored (RFC 6749 §5.1). */
const deviceTokenResponse = z.object({
  access_token: z.string().min(1),
  token_type: z.string().min(1),
  expires_in: z.number().int().positive().optional(),
  refresh_token: z.string().min(1).optional(),
  scope: z.string().optional(),
  // Straight from the token endpoint over the connection the CLI opened (OIDC Core §3.1.3.7 ¶6);
  // kept only to show whose sign-in a profile is (`latchkey status`).
  id_token: z.string().min(1).optional(),
});
const browserTimeoutMs = 5 * 60 * 1000;
/**
 * How long after starting the browser a second presentation of the start secret is still awaited
 * before anything is stored. No other account can read the secret; should it leak all the same,
 * a program racing the person can finish a whole sign-in before a browser has even started, and
 * is caught only when the browser then opens the page too.
 */
const settleAfterLaunchMs = 5000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const openedTwice = (again: string) =>
  new CommandError(
    `the sign-in page was opened twice: another program on this machine may have tried to take over the sign-in; nothing was stored. Run ${again} again.`,
    exitCodes.failure,
  );

interface LoginOptions {
  issuer: string;
  clientId: string;
  scope: string;
  audience: string | undefined;
  signal: AbortSignal;
  /** `--dpop`: the key the tokens are bound to (RFC 9449). */
  dpopJwk: JWK | undefined;
  /** The command that starts this sign-in over, for messages. */
  again: string;
}

async function browserLogin(
  context: CommandContext<{ 'no-browser'?: boolean }>,
  config: oidc.Configuration,
  o: LoginOptions,
  hints: { ssh: boolean; browser: string | undefined; home: string },
) {
  const state = oidc.randomState();
  const listener = await listenForCallback(state, browserTimeoutMs, o.signal);
  let answer: ((ok: boolean) => void) | undefined;
  let page: SignInPage | undefined;
  try {
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: listener.redirectUri,
      scope: o.scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...(o.audience ? { audience: o.audience } : {}),
    });
    if (hints.ssh) context.stderr.write('This looks like an SSH session without a display: "latchkey login --device" may suit it better.\n');
    // In full, for --no-browser and for tools that read it: the terminal is the person's own, unlike a command line.
    context.stderr.write(`Open this address in a browser to sign in:\n\n  ${url.href}\n\n`);
    let launchedAt: number | undefined;
    if (context.values['no-browser'] !== true) {
      // Not the request itself, nor any address that leads to it: the browser's command line is
      // readable by every local account (/proc/PID/cmdline), and whoever opened such an address
      // first could sign in as themselves and have their tokens stored here. The browser gets a
      // file only this account can read, which posts the one-time secret; a second post cancels.
      try {
        page = writeSignInPage(hints.home, listener.startForm(url.href));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        context.stderr.write(
          `Could not open your browser (cannot write the sign-in page in ${printable(hints.home)}: ${printable(code)}): open the address above. (waiting up to 5 minutes)\n`,
        );
      }
      if (page) {
        openBrowser(page.url, hints.browser);
        launchedAt = Date.now();
        context.stderr.write('Opening your browser… (waiting up to 5 minutes; if it shows no sign-in page, open the address above)\n');
      }
    }
    let callback: Callback;
    try {
      callback = await listener.callback;
    } catch (err) {
      if (err instanceof SignInTimeout) throw new CommandError('no sign-in was completed within 5 minutes', exitCodes.expired);
      if (err instanceof SignInAborted) throw new CommandError('cancelled', exitCodes.interrupted);
      if (err instanceof SignInHijacked) throw openedTwice(o.again);
      throw err;
    }
    answer = callback.finish;
    // The listener only accepts the callback with our state, so its error is really the server's.
    const error = callback.url.searchParams.get('error');
    if (error === 'access_denied') throw new CommandError('the sign-in was denied in the browser', exitCodes.accessDenied);
    if (error) {
      const description = callback.url.searchParams.get('error_description');
      throw new CommandError(`the sign-in failed: ${printable(error)}${description ? `: ${printable(description)}` : ''}`);
    }
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      // Checks state and iss (RFC 9207), redeems the code with the verifier, verifies the id_token.
      tokens = await oidc.authorizationCodeGrant(
        config,
        callback.url,
        { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
        undefined,
        o.dpopJwk ? { DPoP: await dpopHandle(config, o.dpopJwk) } : undefined,
      );
    } catch (err) {
      throw new CommandError(`the sign-in could not be completed: ${explainClientError(err, o)}`);
    }
    // A sign-in finished this soon after the browser started may be another program's, done before
    // the person's browser opened the page: wait until it would have, then look.
    if (launchedAt !== undefined && !listener.openedTwice() && Date.now() < launchedAt + settleAfterLaunchMs) {
      context.stderr.write('Finishing the sign-in…\n');
      while (Date.now() < launchedAt + settleAfterLaunchMs && !listener.openedTwice() && !o.signal.aborted) await sleep(100);
    }
    // The second opening may have come while the code was being redeemed: the tokens may be theirs.
    if (listener.openedTwice()) throw openedTwice(o.again);
    answer(true);
    answer = undefined;
    return tokens;
  } finally {
    answer?.(false);
    page?.remove();
    listener.close();
  }
}

async function deviceLogin(context: CommandContext, config: oidc.Configuration, o: LoginOptions) {
  const tokenEndpoint = config.serverMetadata().token_endpoint;
  if (tokenEndpoint === undefined) throw new CommandError('the identity provider publishes no token endpoint');
  let start: Awaited<ReturnType<typeof oidc.initiateDeviceAuthorization>>;
  try {
    start = await oidc.initiateDeviceAuthorization(config, { scope: o.scope, ...(o.audience ? { audience: o.audience } : {}) });
  } catch (err) {
    throw new CommandError(`could not start the device sign-in: ${explainClientError(err, o)}`);
  }
  const complete = start.verification_uri_complete ?? start.verification_uri;
  context.stderr.write(
    `To sign in, open ${visible(start.verification_uri)} on any device and enter the code\n\n    ${visible(start.user_code)}\n\nor open ${visible(complete)}\n\n`,
  );
  if (context.stdout.isTTY && context.stderr.isTTY) {
    context.stderr.write(await QRCode.toString(complete, { type: 'terminal', small: true }));
  }
  const tty = context.stderr.isTTY === true;
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  let frame = 0;
  const deadline = systemClock() + start.expires_in;
  const spinner = tty
    ? setInterval(() => {
        const left = Math.max(0, Math.round(deadline - systemClock()));
        const m = Math.floor(left / 60);
        const s = String(left % 60).padStart(2, '0');
        context.stderr.write(`\r${frames[frame++ % frames.length]} Waiting for approval… ${m}:${s} left `);
      }, 100)
    : undefined;
  const dpopJwk = o.dpopJwk;
  const outcome = await pollForTokens({
    tokenEndpoint,
    clientId: o.clientId,
    deviceCode: start.device_code,
    intervalSeconds: start.interval ?? 5,
    expiresInSeconds: start.expires_in,
    signal: o.signal,
    ...(dpopJwk
      ? { dpopProof: (nonce: string | undefined) => dpopProof(dpopJwk, { method: 'POST', url: tokenEndpoint, ...(nonce === undefined ? {} : { nonce }) }) }
      : {}),
  }).finally(() => {
    if (spinner) {
      clearInterval(spinner);
      context.stderr.write('\r\x1b[K');
    }
  });
  switch (outcome.kind) {
    case 'tokens': {
      const tokens = deviceTokenResponse.safeParse(outcome.body);
      if (!tokens.success) throw new CommandError('the identity provider answered with an unusable token response; nothing was stored');
      return tokens.data;
    }
    case 'denied':
      throw new CommandError('the sign-in was denied on the verification page', exitCodes.accessDenied);
    case 'expired':
      throw new CommandError(`the code expired before it was approved: run "${o.again}" again`, exitCodes.expired);
    case 'aborted':
      throw new CommandError('cancelled', exitCodes.interrupted);
    case 'failed':
      throw new CommandError(`the device sign-in failed: ${outcome.message}`);
  }
}

export const loginCommand = defineCommand({
  usage: 'latchkey login [--issuer URL] [--client-id ID] [--audience A] [--scope S] [--device] [--dpop] [--no-browser] [--profile P]',
  help: clientHelp(
    [
      '  --issuer URL      the identity provider (default: the issuer the profile is signed in at, else',
      '                    LATCHKEY_ISSUER, else http://localhost:3000)',
      "  --client-id ID    the client to sign in as (default: the profile's, else latchkey-cli)",
      "  --audience A      an API to get the access token for (default: the profile's, else the provider's default)",
      '  --scope S         scopes to ask for (default: the profile\'s, else "openid email profile offline_access";',
      '                    for the audience {issuer}/api/v1, the management API, every scope of it too)',
      '                    A profile signed in before is signed in again at its issuer, with its client,',
      '                    audience, scope and DPoP; --issuer naming another server starts afresh.',
      '  --device          the Device Code flow: a code to approve on any other device',
      '  --dpop            bind the tokens to a key made on this machine (DPoP, RFC 9449): a copied',
      '                    token is useless without it; the key stays in the credentials file (0600)',
      '  --no-browser      print the address, do not open the browser (the browser is given a',
      '                    page file only you can read, never the sign-in request itself)',
      '',
    ].join('\n'),
  ),
  positionals: { min: 0, max: 0 },
  options: {
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    audience: { type: 'string' },
    scope: { type: 'string' },
    device: { type: 'boolean' },
    dpop: { type: 'boolean' },
    'no-browser': { type: 'boolean' },
    profile: { type: 'string' },
  },
  async run(context) {
    const client = loadClientConfig(context.env, homedir());
    const profileName = context.values.profile ?? 'default';
    const issuerOption = context.values.issuer;
    if (issuerOption !== undefined && !isIssuerUrl(issuerOption)) {
      throw new CommandError(`--issuer must be an http(s) URL with no query or fragment, not "${printable(issuerOption)}"`, exitCodes.usage);
    }
    const store = new CredentialsStore(client.home, client.issuer);
    const stored = store.get(profileName); // a damaged file is reported before anyone signs in
    const issuer = (issuerOption ?? stored?.issuer ?? client.issuer).replace(/\/+$/, '');
    // Signing a profile in again (its sign-in ended, say): at the server, as the client, for the
    // API and scope, and with DPoP, as before — what the person chose then still holds — unless
    // an option says otherwise. An --issuer naming another server starts afresh.
    const again = stored !== undefined && stored.issuer === issuer ? stored : undefined;
    const dpop = context.values.dpop === true || again?.dpop_jwk !== undefined;
    const clientId = context.values['client-id'] || again?.client_id || 'latchkey-cli';
    const audience = context.values.audience || again?.audience || undefined;
    // For the server's management API, every management scope is asked for: the server keeps
    // those the person's roles allow (all of them for the admin role), so no list is to be typed.
    const forManagement = audience !== undefined && audience === managementAudience(issuer);
    const options: Omit<LoginOptions, 'signal'> = {
      issuer,
      clientId,
      scope: context.values.scope || (forManagement ? `${defaultScope} ${managementScopes.join(' ')}` : again?.scope || defaultScope),
      audience,
      dpopJwk: dpop ? await newDpopKey() : undefined,
      again: loginCommandLine({ profile: profileName, issuer, defaultIssuer: client.issuer }, [
        ...(context.values.device === true ? ['--device'] : []),
        ...(context.values['client-id'] ? ['--client-id', shellWord(clientId)] : []),
      ]),
    };
    if (issuerOption === undefined && stored !== undefined && issuer !== client.issuer) {
      context.stderr.write(`Signing in again at ${issuer}, where the profile "${visible(profileName)}" was signed in.\n`);
    }
    const config = await discover(options.issuer, options.clientId);

    const abort = new AbortController();
    const onInterrupt = () => abort.abort();
    // Ctrl-C, kill, or a closed terminal: the sign-in ends the ordinary way, so the page file goes.
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    for (const name of signals) process.once(name, onInterrupt);
    try {
      const o = { ...options, signal: abort.signal };
      const tokens =
        context.values.device === true
          ? await deviceLogin(context, config, o)
          : await browserLogin(context, config, o, { ssh: client.sshWithoutDisplay, browser: client.browserCommand, home: client.home });
      const profile: Profile = {
        issuer: options.issuer,
        client_id: options.clientId,
        ...(options.audience ? { audience: options.audience } : {}),
        scope: tokens.scope ?? options.scope,
        access_token: tokens.access_token,
        // openid-client lowercases it; RFC 6749 token types are case-insensitive, Bearer is the usual spelling.
        token_type: tokenTypeName(tokens.token_type),
        expires_at: epochSeconds(systemClock) + (tokens.expires_in ?? 0),
        ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
        ...('id_token' in tokens && typeof tokens.id_token === 'string' ? { id_token: tokens.id_token } : {}),
        ...(options.dpopJwk ? { dpop_jwk: options.dpopJwk } : {}),
      };
      if (options.dpopJwk && profile.token_type.toLowerCase() !== 'dpop') {
        throw new CommandError('the identity provider did not bind the tokens to the DPoP key (it may not support DPoP); nothing was stored');
      }
      let who = '';
      try {
        const claims = await oidc.fetchUserInfo(
          config,
          profile.access_token,
          oidc.skipSubjectCheck,
          options.dpopJwk ? { DPoP: await dpopHandle(config, options.dpopJwk) } : undefined,
        );
        who = ` as ${visible(claims.preferred_username ?? claims.email ?? claims.sub)}`;
        // Whose sign-in this is, for `latchkey status` (the Device Code flow brings no id_token).
        profile.account = {
          sub: claims.sub,
          ...(typeof claims.preferred_username === 'string' ? { preferred_username: claims.preferred_username } : {}),
          ...(typeof claims.email === 'string' ? { email: claims.email } : {}),
        };
      } catch {
        // Who it is shows in `latchkey whoami`; the sign-in itself succeeded.
      }
      await store.withLock(async () => store.set(profileName, profile));
      context.stderr.write(`Signed in to ${options.issuer}${who}${profileName === 'default' ? '' : ` (profile ${profileName})`}.\n`);
      return exitCodes.ok;
    } finally {
      for (const name of signals) process.off(name, onInterrupt);
    }
  },
});
