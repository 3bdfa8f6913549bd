/** Renders an Eta page with what every page shows (product name, who is signed in). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.js';
import { currentSession } from './session.js';

export async function renderPage(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  view: string,
  data: Record<string, unknown>,
  status = 200,
): Promise<FastifyReply> {
  const signedIn = await currentSession(request, services);
  const html = await reply.viewAsync(`${view}.eta`, {
    productName: services.config.productName,
    signedInAs: signedIn?.user.username,
    // The passkey pages' scripts, on exactly the pages whose policy lets them run (allowOwnScripts).
    passkeyScripts: String(reply.getHeader('content-security-policy') ?? '').includes("script-src 'self'"),
    ...data,
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

export function renderErrorPage(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  page: ErrorPage,
  status: number,
): Promise<FastifyReply> {
  return renderPage(request, reply, services, 'error', { title: page.heading, link: undefined, ...page }, status);
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
