/**
 * What every page of the admin console shares: who may use it — a signed-in person holding the
 * built-in role `admin`, with a multi-factor session unless LATCHKEY_MFA=off (else the step-up
 * page, which also lets a person without a factor set one up) — the CSRF check of every form, the
 * page frame with its navigation, the notice a change leaves behind after its 303, and the audit
 * line naming the acting admin. The console's route plugins (routes/admin/) are built from these.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { adminRole } from '../directory/roles.js';
import { managedMessage } from '../directory/managed.js';
import { AdminInputError } from '../directory/validation.js';
import type { ManagedKind } from '../store/store.js';
import { audit, type AuditEvent } from '../audit/audit_events.js';
import { csrfToken, csrfTokenValid } from '../http/csrf.js';
import { parseFields } from '../http/form.js';
import { formExpiredPage, renderErrorPage, renderPage, safeReturnTo } from '../http/pages.js';
import { currentSession, type SignedIn } from '../http/session.js';
import { isMultiFactor } from '../mfa/amr.js';
import { stepUpPath } from '../mfa/policy.js';
import type { Services } from '../services.js';

/**
 * A field or path segment naming something stored (an id, a name, a key): bounded, and without
 * control characters, which nothing stored has (and PostgreSQL text cannot even hold U+0000).
 */
export function storedKey(max: number) {
  return z
    .string()
    .max(max)
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'The request is malformed.');
}

export type Section = 'overview' | 'users' | 'sessions' | 'clients' | 'apis' | 'roles' | 'connectors' | 'keys' | 'audit';

/** The navigation bar, in its order. */
export const sections: readonly { id: Section; href: string; label: string }[] = [
  { id: 'overview', href: '/admin', label: 'Overview' },
  { id: 'users', href: '/admin/users', label: 'Users' },
  { id: 'sessions', href: '/admin/sessions', label: 'Sessions' },
  { id: 'clients', href: '/admin/clients', label: 'Clients' },
  { id: 'apis', href: '/admin/apis', label: 'APIs' },
  { id: 'roles', href: '/admin/roles', label: 'Roles' },
  { id: 'connectors', href: '/admin/connectors', label: 'Connectors' },
  { id: 'keys', href: '/admin/keys', label: 'Signing keys' },
  { id: 'audit', href: '/admin/audit', label: 'Audit log' },
];

/** The administrator acting, as their session shows them. */
export type Admin = SignedIn;

export type Gate<T = object> = ({ ok: true; admin: Admin } & T) | { ok: false; reply: FastifyReply };

/** A message above a page's content: what a change did, or why it was refused. */
export interface Notice {
  kind: 'notice' | 'error';
  text: string;
  /** The form the error is about (shown beside it). */
  about?: string;
}

/**
 * A path segment from whatever a request sent: lone surrogates (a cut through an emoji, or sent
 * as such) become U+FFFD first, since encodeURIComponent throws on them — and this runs before
 * the admin check, for anyone.
 */
export function pathSegment(raw: string): string {
  return encodeURIComponent(raw.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'));
}

/** The path to come back to after signing in or adding a second factor (only a path on this server). */
export function hereOf(request: FastifyRequest, fallback: string): string {
  return safeReturnTo(request.url, fallback, 2048);
}

/**
 * The acting admin, or the reply that turns the request away: not signed in → the sign-in page
 * (and back to `here`); signed in without the admin role → a 403 page (audited); a session of
 * one factor where second factors are in use → the step-up page (and back to `here`).
 */
export async function adminGate(request: FastifyRequest, reply: FastifyReply, services: Services, here: string): Promise<Gate> {
  const signedIn = await currentSession(request, services);
  if (!signedIn) return { ok: false, reply: await reply.redirect(`/login?return_to=${encodeURIComponent(here)}`, 303) };
  if (!signedIn.user.roles.includes(adminRole)) {
    audit(request, 'admin.access_denied', { userId: signedIn.user.id, method: request.method, path: request.routeOptions.url });
    const page = {
      heading: 'Administrators only',
      message: 'The admin console is for people with the admin role, and your account does not have it. Ask an administrator if you need it.',
      link: { href: '/account', label: 'Go to your account' },
    };
    return { ok: false, reply: await renderErrorPage(request, reply, services, page, 403) };
  }
  if (services.config.mfa !== 'off' && !isMultiFactor(signedIn.session.amr)) {
    return { ok: false, reply: await reply.redirect(stepUpPath(here), 303) };
  }
  return { ok: true, admin: signedIn };
}

/**
 * A state change: the acting admin (as adminGate), then the form parsed with `schema` and its
 * CSRF token checked (a missing or forged token → 403, nothing changed). `back` is the page the
 * form is on.
 */
export async function adminForm<T extends { csrf_token?: string | undefined }>(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  schema: z.ZodType<T>,
  back: string,
): Promise<Gate<{ form: T }>> {
  const gate = await adminGate(request, reply, services, back);
  if (!gate.ok) return gate;
  const form = parseFields(schema, request.body);
  if (!(await csrfTokenValid(request, services, 'admin', form.csrf_token))) {
    return {
      ok: false,
      reply: await renderErrorPage(request, reply, services, { ...formExpiredPage, link: { href: back, label: 'Back to the admin console' } }, 403),
    };
  }
  return { ok: true, admin: gate.admin, form };
}

/** A page of the console: its frame (navigation, who is signed in) and a fresh form token. */
export async function renderAdmin(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  view: string,
  section: Section,
  data: Record<string, unknown> & { title: string },
  status = 200,
): Promise<FastifyReply> {
  return renderPage(
    request,
    reply,
    services,
    `admin/${view}`,
    { section, sections, csrfToken: await csrfToken(request, reply, services, 'admin'), notice: undefined, ...data },
    status,
  );
}

/** The 404 page of something the console does not have (an unknown user, client, role …). */
export function notFound(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  what: string,
  back: { href: string; label: string },
): Promise<FastifyReply> {
  return renderErrorPage(
    request,
    reply,
    services,
    { heading: `No such ${what}`, message: `There is no ${what} by that name here. It may have been removed.`, link: back },
    404,
  );
}

/** After a change: back to the page (303), which shows the notice of `done` (a key, never text). */
export function doneRedirect(reply: FastifyReply, path: string, done: string): FastifyReply {
  return reply.redirect(`${path}${path.includes('?') ? '&' : '?'}done=${encodeURIComponent(done)}`, 303);
}

/** The notice of a `done` key, if it is one of the page's. */
export function noticeOf(done: string | undefined, texts: Record<string, string>): Notice | undefined {
  const text = done !== undefined && Object.hasOwn(texts, done) ? texts[done] : undefined;
  return text === undefined ? undefined : { kind: 'notice', text };
}

/** An audit event done by the acting admin for (or to) someone or something else. */
export function adminAudit(request: FastifyRequest, admin: Admin, event: AuditEvent, fields: Record<string, unknown>): void {
  audit(request, event, { actor: admin.user.username, ...fields });
}

/** The date and minute, in UTC, as the console shows times. */
export function when(epochSeconds: number | undefined): string {
  return epochSeconds === undefined ? '' : `${new Date(epochSeconds * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const controlCharacters = /[\u0000-\u001f\u007f]/;

/** Throws AdminInputError when `value` holds control characters (no place in a name, and PostgreSQL refuses NUL). */
export function printable(value: string, what: string): string {
  if (controlCharacters.test(value)) throw new AdminInputError(`${what} must not contain control characters.`);
  return value;
}

/** The non-empty lines of a textarea, trimmed (each checked for control characters). */
export function linesOf(text: string, what: string, max = 100): string[] {
  const lines = text
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  for (const line of lines) printable(line, what);
  if (lines.length > max) throw new AdminInputError(`Give at most ${max} ${what}.`);
  return lines;
}

/**
 * The values of a group of checkboxes. A form may not repeat a field (a repeated parameter is
 * refused), so each box has a name of its own, `<group>_<n>`, and carries its meaning in its value.
 */
export function checkedValues(fields: Record<string, unknown>, group: string, max = 500): string[] {
  const pattern = new RegExp(`^${group}_\\d{1,4}$`);
  const values = Object.entries(fields)
    .filter(([name, value]) => pattern.test(name) && typeof value === 'string' && value !== '')
    .map(([, value]) => value as string);
  if (values.length > max) throw new AdminInputError(`Choose at most ${max}.`);
  return [...new Set(values)];
}

/** AdminInputError's sentence (written for the command line too) as a page shows it. */
export function sentence(err: AdminInputError): string {
  const text = err.message.trim();
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** Runs `check`; an AdminInputError becomes an error notice about `about` (other errors are thrown on). */
export function checked<T>(check: () => T, about?: string): { ok: true; value: T } | { ok: false; notice: Notice } {
  try {
    return { ok: true, value: check() };
  } catch (err) {
    if (!(err instanceof AdminInputError)) throw err;
    return { ok: false, notice: { kind: 'error', text: sentence(err), ...(about === undefined ? {} : { about }) } };
  }
}

/** As checked, for checks that wait on the store. */
export async function checkedAsync<T>(check: () => Promise<T>, about?: string): Promise<{ ok: true; value: T } | { ok: false; notice: Notice }> {
  try {
    return { ok: true, value: await check() };
  } catch (err) {
    if (!(err instanceof AdminInputError)) throw err;
    return { ok: false, notice: { kind: 'error', text: sentence(err), ...(about === undefined ? {} : { about }) } };
  }
}

/** The error shown at the top of a managed object's page when a form would change it (409). */
export function managedNotice(kind: ManagedKind, id: string, managedBy: string): Notice {
  return { kind: 'error', text: managedMessage(kind, id, managedBy) };
}
