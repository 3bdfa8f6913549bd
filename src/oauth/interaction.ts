/**
 * A pending authorization request ("interaction") travels sealed in the browser's URLs and forms
 * instead of a database row: nothing is stored for a request nobody has acted on, so anonymous
 * /authorize requests cannot fill the disk. The seal is an HMAC over the validated
 * request, its expiry and the browser's CSRF cookie, so it cannot be forged or altered, expires
 * after ten minutes, and works only in the browser that started it. Its contents (redirect URI,
 * state, nonce, PKCE challenge) are what the client already put in the /authorize URL.
 */
import { constantTimeEqual, hmacSha256, randomSecret } from '../crypto/secrets.js';
import type { AuthorizationRequest, PromptValue } from '../store/store.js';

export interface Interaction {
  /** Random: what a sign-in made for this request remembers (SessionRecord.interactionId). */
  id: string;
  request: AuthorizationRequest;
  /** OIDC max_age: the sign-in may be at most this many seconds old when the code is issued. */
  maxAge: number | undefined;
  /** The `sub` of a valid id_token_hint: the person the client expects (OIDC Core §3.1.2.1). */
  expectedSubject: string | undefined;
  /**
   * The `sub` the `claims` parameter asks for with a value (OIDC Core §5.5.1): unlike a hint, no
   * one else may answer, even by signing in for this very request.
   */
  requiredSubject?: string | undefined;
  createdAt: number;
  expiresAt: number;
}

/** How long a person has to sign in and answer before the request must start over. */
export const interactionLifetime = 600;

/** A sealed interaction is base64url text, a dot, and the MAC; URL- and form-safe as it is. */
export const sealedInteractionPattern = /^[A-Za-z0-9_-]{1,24000}\.[A-Za-z0-9_-]{43}$/;

export function newInteraction(
  request: AuthorizationRequest,
  options: { maxAge: number | undefined; expectedSubject: string | undefined; requiredSubject?: string | undefined; now: number },
): Interaction {
  return {
    id: randomSecret().slice(0, 22),
    request,
    maxAge: options.maxAge,
    expectedSubject: options.expectedSubject,
    ...(options.requiredSubject === undefined ? {} : { requiredSubject: options.requiredSubject }),
    createdAt: options.now,
    expiresAt: options.now + interactionLifetime,
  };
}

/** Compact wire form: short keys keep the URL short; absent members are left out. */
interface Wire {
  i: string;
  c: string;
  r: string;
  s: string;
  a: string;
  st: string;
  n?: string;
  cc?: string;
  p?: PromptValue[];
  m?: number;
  h?: string;
  /** The required subject (claims sub value). */
  rs?: string;
  /** acr_values (only ever urn:latchkey:mfa). */
  ac?: string;
  t: number;
  /** response_mode=form_post. */
  rm?: 'form_post';
  /** dpop_jkt (RFC 9449 §10). */
  dj?: string;
  /** The claims asked for by name (OIDC `claims`): userinfo, id_token. */
  cl?: { u: string[]; i: string[] };
  /** ui_locales. */
  ul?: string;
  /** login_hint. */
  lh?: string;
  e: number;
}

function mac(key: string, browser: string, body: string): string {
  return hmacSha256(key, `interaction:v1:${browser}:${body}`);
}

/** `browser` is the browser binding (a digest of its CSRF cookie). */
export function sealInteraction(key: string, browser: string, interaction: Interaction): string {
  const r = interaction.request;
  const wire: Wire = {
    i: interaction.id,
    c: r.clientId,
    r: r.redirectUri,
    s: r.scope,
    a: r.audience,
    st: r.state,
    ...(r.nonce === undefined ? {} : { n: r.nonce }),
    ...(r.codeChallenge === undefined ? {} : { cc: r.codeChallenge }),
    ...(r.prompt.length === 0 ? {} : { p: r.prompt }),
    ...(interaction.maxAge === undefined ? {} : { m: interaction.maxAge }),
    ...(interaction.expectedSubject === undefined ? {} : { h: interaction.expectedSubject }),
    ...(interaction.requiredSubject === undefined ? {} : { rs: interaction.requiredSubject }),
    ...(r.acrValues === undefined ? {} : { ac: r.acrValues }),
    ...(r.responseMode === undefined ? {} : { rm: r.responseMode }),
    ...(r.dpopJkt === undefined ? {} : { dj: r.dpopJkt }),
    ...(r.claims === undefined ? {} : { cl: { u: r.claims.userinfo, i: r.claims.idToken } }),
    ...(r.uiLocales === undefined ? {} : { ul: r.uiLocales }),
    ...(r.loginHint === undefined ? {} : { lh: r.loginHint }),
    t: interaction.createdAt,
    e: interaction.expiresAt,
  };
  const body = Buffer.from(JSON.stringify(wire), 'utf8').toString('base64url');
  return `${body}.${mac(key, browser, body)}`;
}

/** The interaction, if `sealed` is genuine, made for this browser and not expired at `now`. */
export function openInteraction(key: string, browser: string, sealed: string, now: number): Interaction | undefined {
  if (!sealedInteractionPattern.test(sealed)) return undefined;
  const [body = '', tag = ''] = sealed.split('.');
  if (!constantTimeEqual(mac(key, browser, body), tag)) return undefined;
  let wire: Wire;
  try {
    wire = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Wire;
  } catch {
    return undefined;
  }
  if (typeof wire.e !== 'number' || now >= wire.e) return undefined;
  return {
    id: wire.i,
    request: {
      clientId: wire.c,
      redirectUri: wire.r,
      scope: wire.s,
      audience: wire.a,
      state: wire.st,
      nonce: wire.n,
      codeChallenge: wire.cc,
      prompt: wire.p ?? [],
      ...(wire.ac === undefined ? {} : { acrValues: wire.ac }),
      ...(wire.rm === 'form_post' ? { responseMode: 'form_post' as const } : {}),
      ...(typeof wire.dj === 'string' ? { dpopJkt: wire.dj } : {}),
      ...(wire.cl && Array.isArray(wire.cl.u) && Array.isArray(wire.cl.i) ? { claims: { userinfo: wire.cl.u, idToken: wire.cl.i } } : {}),
      ...(typeof wire.ul === 'string' ? { uiLocales: wire.ul } : {}),
      ...(typeof wire.lh === 'string' ? { loginHint: wire.lh } : {}),
    },
    maxAge: wire.m,
    expectedSubject: wire.h,
    ...(typeof wire.rs === 'string' ? { requiredSubject: wire.rs } : {}),
    createdAt: wire.t,
    expiresAt: wire.e,
  };
}
