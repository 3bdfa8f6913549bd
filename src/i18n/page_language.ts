/**
 * The language of the pages a request answers with: the one the client asked for with OIDC
 * `ui_locales` (OIDC Core §3.1.2.1), when it names one we have; else the browser's
 * Accept-Language; else English.
 */
import type { FastifyRequest } from 'fastify';
import { matchLanguage, negotiateLanguage, parseAcceptLanguage, parseUiLocales, type Language } from './languages.js';

const chosen = new WeakMap<FastifyRequest, Language>();

/**
 * Records the authorization request's `ui_locales` for this request's pages. One that names no
 * supported language changes nothing (the browser's Accept-Language decides).
 */
export function setPageLanguage(request: FastifyRequest, uiLocales: string | undefined): void {
  const language = matchLanguage(parseUiLocales(uiLocales));
  if (language) chosen.set(request, language);
  else chosen.delete(request);
}

export function pageLanguage(request: FastifyRequest): Language {
  return chosen.get(request) ?? negotiateLanguage(parseAcceptLanguage(request.headers['accept-language']));
}
