/**
 * The browser's side of a pending authorization request: the sealed interaction (see
 * oauth/interaction.ts) travels in the sign-in pages' return_to and forms, and is opened only in
 * the browser that started it (its CSRF cookie is bound into the seal). Every page on the way —
 * sign-in, second factor, upstream sign-in, account security — reads it the same way here.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { epochSeconds } from '../clock.js';
import { setPageLanguage } from '../i18n/page_language.js';
import { openInteraction, sealedInteractionPattern, type Interaction } from '../oauth/interaction.js';
import type { Services } from '../services.js';
import { browserBinding } from './csrf.js';

/** A return_to may carry a sealed authorization request, so it may be that long. */
export const maxReturnToLength = 24_200;

const continuePrefix = '/authorize/continue?interaction=';

/** Where the authorization request sealed as `sealed` goes on once the person has signed in. */
export function continuePath(sealed: string): string {
  return `${continuePrefix}${sealed}`;
}

/** The sealed interaction behind a return_to of the sign-in page, if it is one. */
export function sealedInteractionOf(returnTo: string): string | undefined {
  if (!returnTo.startsWith(continuePrefix)) return undefined;
  const sealed = returnTo.slice(continuePrefix.length);
  return sealedInteractionPattern.test(sealed) ? sealed : undefined;
}

/**
 * Opens the interaction sealed in a return_to or form field, if genuine, for this browser, and
 * unexpired. The pages answering it are then in the language its client asked for (ui_locales).
 */
export function openSealedInteraction(request: FastifyRequest, reply: FastifyReply, services: Services, sealed: string | undefined): Interaction | undefined {
  if (sealed === undefined || sealed === '') return undefined;
  const interaction = openInteraction(services.interactionKey, browserBinding(request, reply, services.config), sealed, epochSeconds(services.clock));
  if (interaction) setPageLanguage(request, interaction.request.uiLocales);
  return interaction;
}
