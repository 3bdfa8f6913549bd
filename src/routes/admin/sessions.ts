/**
 * /admin/sessions: every live sign-in, of everyone — browser sessions and app sign-ins
 * (refresh-token families: devices, command lines, applications) — most recently used first, each
 * with its person, the device named as people know it (http/device_description.ts), the address
 * it was made from, when it started and was last seen, and an "End" button: what `latchkey
 * sessions list` and `sessions revoke` do, from the console. Ending is a CSRF-protected form and
 * is audited (session.ended_by_admin); an ended browser session is told to the clients that asked
 * for Back-Channel Logout. `user` narrows the list to one person; `page` pages through it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { endSignIn } from '../../account/end_sign_in.js';
import { epochSeconds } from '../../clock.js';
import { deviceName } from '../../http/device_description.js';
import { parseFields } from '../../http/form.js';
import { notifyBackchannelLogoutLater } from '../../oauth/backchannel_logout.js';
import {
  adminAudit,
  adminForm,
  adminGate,
  doneRedirect,
  hereOf,
  noticeOf,
  renderAdmin,
  storedKey,
  when,
  type Admin,
  type Notice,
} from '../../console/console_page.js';

/** Rows on one page: a phone still scrolls through them quickly. */
const pageSize = 50;

const listQuery = z.object({
  user: storedKey(256).default(''),
  page: z.string().max(6).default(''),
  done: z.string().max(32).optional(),
});
const endForm = z.object({
  csrf_token: z.string().max(256).optional(),
  sign_in: storedKey(256).default(''),
  /** The list to come back to (its filter and page), as the page's own link gave it. */
  user: storedKey(256).default(''),
  page: z.string().max(6).default(''),
});

const notices: Record<string, string> = {
  ended: 'That sign-in was ended.',
  ended_none: 'That sign-in had ended already.',
};

/** The list's own address with this filter and page. */
function listPath(user: string, page: number): string {
  const query = new URLSearchParams();
  if (user !== '') query.set('user', user);
  if (page > 1) query.set('page', String(page));
  const text = query.toString();
  return text === '' ? '/admin/sessions' : `/admin/sessions?${text}`;
}

function pageNumber(text: string): number {
  return /^\d{1,5}$/.test(text) && Number(text) >= 1 ? Number(text) : 1;
}

export async function adminSessionRoutes(app: FastifyInstance): Promise<void> {
  const services = app.services;
  const { store, clock } = services;
  const page = { config: { page: true } };

  async function showSessions(request: FastifyRequest, reply: FastifyReply, admin: Admin, user: string, pageNo: number, notice?: Notice, status = 200) {
    const now = epochSeconds(clock);
    const person = user.trim() === '' ? undefined : await store.findUserByUsername(user.trim());
    const unknownPerson = user.trim() !== '' && person === undefined;
    const [sessions, families, clients] = unknownPerson
      ? [[], [], []]
      : await Promise.all([store.listSessions(person?.id, now), store.listRefreshFamilies(person?.id, now), store.listClients()]);
    const clientName = new Map(clients.map((c) => [c.clientId, c.name || c.clientId]));
    const all = [
      ...sessions.map((s) => ({
        id: s.id,
        kind: 'browser' as const,
        userId: s.userId,
        what: s.id === admin.session.id ? 'This browser (your session)' : 'Browser session',
        device: deviceName(s.userAgent),
        from: s.ip ?? '',
        started: s.createdAt,
        lastSeen: s.lastSeenAt ?? s.createdAt,
      })),
      ...families.map((f) => ({
        id: f.familyId,
        kind: 'app' as const,
        userId: f.userId,
        what: clientName.get(f.clientId) ?? f.clientId,
        device: deviceName(f.approvedUserAgent),
        from: f.approvedIp ?? '',
        started: f.createdAt,
        lastSeen: f.lastUsedAt,
      })),
    ].sort((a, b) => b.lastSeen - a.lastSeen || (a.id < b.id ? -1 : 1));
    const pages = Math.max(1, Math.ceil(all.length / pageSize));
    const shownPage = Math.min(pageNo, pages);
    const shown = all.slice((shownPage - 1) * pageSize, shownPage * pageSize);
    // Usernames for the people on this page (one lookup per distinct id).
    const ids = [...new Set(shown.map((row) => row.userId))];
    const usernames = new Map((await Promise.all(ids.map((id) => store.findUserById(id)))).filter((u) => u !== undefined).map((u) => [u.id, u.username]));
    return renderAdmin(
      request,
      reply,
      services,
      'sessions',
      'sessions',
      {
        title: 'Sessions',
        user,
        page: shownPage,
        pages,
        total: all.length,
        unknownPerson,
        rows: shown.map((row) => ({
          ...row,
          username: usernames.get(row.userId) ?? row.userId,
          started: when(row.started),
          lastSeen: when(row.lastSeen),
        })),
        newer: shownPage > 1 ? listPath(user.trim(), shownPage - 1) : undefined,
        older: shownPage < pages ? listPath(user.trim(), shownPage + 1) : undefined,
        notice,
      },
      status,
    );
  }

  app.get('/admin/sessions', page, async (request, reply) => {
    const gate = await adminGate(request, reply, services, hereOf(request, '/admin/sessions'));
    if (!gate.ok) return gate.reply;
    const query = parseFields(listQuery, request.query);
    return showSessions(request, reply, gate.admin, query.user, pageNumber(query.page), noticeOf(query.done, notices));
  });

  app.post('/admin/sessions/end', page, async (request, reply) => {
    const gate = await adminForm(request, reply, services, endForm, '/admin/sessions');
    if (!gate.ok) return gate.reply;
    const { admin, form } = gate;
    const now = epochSeconds(clock);
    const ended = form.sign_in === '' ? undefined : await endSignIn(store, form.sign_in, now);
    if (ended?.kind === 'browser') {
      const { session } = ended;
      notifyBackchannelLogoutLater(services, [session], request);
      adminAudit(request, admin, 'session.ended_by_admin', { userId: session.userId, kind: 'browser', sessionId: session.id });
    } else if (ended?.kind === 'app') {
      const { family } = ended;
      adminAudit(request, admin, 'session.ended_by_admin', { userId: family.userId, kind: 'app', clientId: family.clientId, familyId: family.familyId });
    }
    return doneRedirect(reply, listPath(form.user.trim(), pageNumber(form.page)), ended ? 'ended' : 'ended_none');
  });
}
