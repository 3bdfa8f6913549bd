/**
 * Renders an Eta page with what every page shows (product name, who is signed in), in the page's
 * language (i18n/page_language.ts): every view gets `lang`, `t` and `tx` (i18n/translate.ts), and
 * the texts a route passes in — title, heading, message, error, link label — are translated here,
 * so a route writes them in English.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import type { Language } from '../i18n/languages.js';
import { pageLanguage } from '../i18n/page_language.js';
import { translator } from '../i18n/translate.js';
import { currentSession } from './session.js';

/**
 * The views translated so far. The others (the account pages, the admin console) are English
 * throughout, footer included, and say so in their lang attribute: one page, one language.
 */
const translatedViews: ReadonlySet<string> = new Set([
  'activate',
  'consent',
  'continue',
  'device_confirm',
  'device_result',
  'error',
  'forgot_password',
  'login',
  'logout',
  'logout_confirm',
  'logout_stay',
  'reset_password',
  'second_factor',
  'verify_email',
]);

const translatedFields = ['title', 'heading', 'message', 'error'] as const;

export async function renderPage(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  view: string,
  data: Record<string, unknown>,
  status = 200,
): Promise<FastifyReply> {
  const signedIn = await currentSession(request, services);
  let lang: Language = 'en';
  if (translatedViews.has(view)) {
    lang = pageLanguage(request);
    // The page depends on Accept-Language (RFC 9110 §12.5.5).
    const vary = reply.getHeader('vary');
    reply.header('vary', vary === undefined || vary === '' ? 'Accept-Language' : `${String(vary)}, Accept-Language`);
  }
  const { t, tx } = translator(lang);
  const translated: Record<string, unknown> = {};
  for (const field of translatedFields) {
    const value = data[field];
    if (typeof value === 'string') translated[field] = t(value);
  }
  const link = data.link as { label?: unknown } | undefined;
  if (link && typeof link === 'object' && typeof link.label === 'string') translated.link = { ...link, label: t(link.label) };
  const html = await reply.viewAsync(`${view}.eta`, {
    productName: services.config.productName,
    signedInAs: signedIn?.user.username,
    // The passkey pages' scripts, on exactly the pages whose policy lets them run (allowOwnScripts).
    passkeyScripts: String(reply.getHeader('content-security-policy') ?? '').includes("script-src 'self'"),
    ...data,
    ...translated,
    lang,
    t,
    tx,
  });
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

export const formExpiredPage = {
  heading: 'This form has expired',
  message: 'For your security the form could not be accepted. Go back, reload the page and try again.',
};

export interface ErrorPage {
  heading: string;
  message: string;
  link?: { href: string; label: string };
}

/**
 * An error page. It shows the request's id (http/request_id.ts), which its log line carries too:
 * what a person can hand an operator so the operator finds what happened.
 */
export function renderErrorPage(request: FastifyRequest, reply: FastifyReply, services: Services, page: ErrorPage, status: number): Promise<FastifyReply> {
  return renderPage(request, reply, services, 'error', { title: page.heading, link: undefined, ...page, requestId: request.id }, status);
}

/**
 * Only paths on this server are accepted as a place to return to after sign-in (no open
 * redirect). The result is re-serialised by URL, so it is percent-encoded ASCII and always fits
 * in a Location header.
 */
export function safeReturnTo(value: string | undefined, fallback = '/activate', maxLength = 2048): string {
  if (!value || value.length > maxLength) return fallback;
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return fallback;
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return fallback;
  const base = 'http://return-to.invalid';
  let url: URL;
  try {
    url = new URL(value, base);
  } catch {
    return fallback;
  }
  if (url.origin !== base) return fallback;
  const path = url.pathname + url.search;
  // Normalising can itself produce a network-path reference: "/.//evil" becomes "//evil".
  if (path.startsWith('//') || path.startsWith('/\\')) return fallback;
  return path;
}
