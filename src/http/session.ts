/**
 * The person's sign-in session: a random id in an HttpOnly cookie, stored only as its digest.
 * A new id is issued at every sign-in (no session fixation). A session whose user was disabled or
 * removed counts as signed out.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { epochSeconds } from '../clock.js';
import { randomId, randomSecret, sha256 } from '../crypto/secrets.js';
import type { Services } from '../services.js';
import type { AuthMethod, SessionRecord, UserRecord } from '../store/store.js';
import { clearCookie, cookieNames, setCookie } from './cookies.js';
import { headerText } from './header_text.js';

export interface SignedIn {
  session: SessionRecord;
  user: UserRecord;
}

/** How often a session's "last used" is written (seconds). */
const lastSeenResolution = 300;

const loaded = new WeakMap<FastifyRequest, Promise<SignedIn | undefined>>();

export function currentSession(request: FastifyRequest, services: Services): Promise<SignedIn | undefined> {
  let result = loaded.get(request);
  if (!result) {
    result = load(request, services);
    loaded.set(request, result);
  }
  return result;
}

async function load(request: FastifyRequest, services: Services): Promise<SignedIn | undefined> {
  const id = request.cookies[cookieNames(services.config).session];
  if (!id || id.length > 128) return undefined;
  const session = await services.store.findSession(sha256(id), epochSeconds(services.clock));
  if (!session) return undefined;
  const user = await services.store.findUserById(session.userId);
  if (!user || user.disabled) return undefined;
  // "Last used" in Devices and apps: a write at most every few minutes, not on every page.
  await services.store.touchSession(session.idHash, epochSeconds(services.clock), lastSeenResolution);
  return { session, user };
}

export async function startSession(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  user: UserRecord,
  how: {
    /** How the person signed in (RFC 8176). */
    amr: AuthMethod[];
    /** The authorization request this sign-in is made for, if any. */
    interactionId?: string | undefined;
    /** When the person signed in, if earlier than now (an upstream's auth_time; a step-up keeps the first step's). */
    signedInAt?: number | undefined;
    /** A session raised to more factors ends when the one it replaces would have, and keeps its public id (`sid`). */
    expiresAt?: number | undefined;
    id?: string | undefined;
  },
): Promise<SignedIn | undefined> {
  const { interactionId, signedInAt, amr } = how;
  const { config, store, clock } = services;
  const previous = request.cookies[cookieNames(config).session];
  if (previous && previous.length <= 128) await store.deleteSession(sha256(previous));
  const id = randomSecret();
  const now = epochSeconds(clock);
  const authTime = signedInAt === undefined ? now : Math.min(now, signedInAt);
  const expiresAt = Math.min(now + config.sessionTtl, how.expiresAt ?? Number.POSITIVE_INFINITY);
  if (expiresAt <= now) return undefined;
  const session: SessionRecord = {
    idHash: sha256(id),
    userId: user.id,
    authTime,
    amr,
    createdAt: now,
    expiresAt,
    interactionId,
    id: how.id ?? randomId(),
    ip: request.ip,
    userAgent: headerText(request.headers['user-agent']),
    lastSeenAt: now,
  };
  // Not if the person's sign-ins were ended (a new password) since `user` was read: a sign-in
  // with the old password racing the change must not survive it.
  if (!(await store.createSession(session, { userTokensRevokedAt: user.tokensRevokedAt }))) return undefined;
  setCookie(reply, config, cookieNames(config).session, id, expiresAt - now);
  const signedIn = { session, user };
  loaded.set(request, Promise.resolve(signedIn));
  return signedIn;
}

export async function endSession(request: FastifyRequest, reply: FastifyReply, services: Services): Promise<void> {
  const name = cookieNames(services.config).session;
  const id = request.cookies[name];
  if (id && id.length <= 128) await services.store.deleteSession(sha256(id));
  clearCookie(reply, services.config, name);
  loaded.set(request, Promise.resolve(undefined));
}
