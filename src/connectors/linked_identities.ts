/**
 * The upstream identities linked to a person — (connector, upstream subject) pairs that sign them
 * in — as the account page, the admin console and `latchkey users list` show them, and the rule for
 * removing one. A link made by email (a --trust-email connector) is a way into the account that a
 * new password does not touch, so people and operators must see it and be able to cut it:
 * - the person may remove one only while another way in remains (a password here, an identity at
 *   another connector, or a passkey where passkeys sign in on their own), checked in the same store
 *   step as the removal; an operator may remove any;
 * - a removed identity signs in no more — not as that user, not linked again by its email, not as
 *   a fresh account (see accounts.ts) — until an administrator allows it again;
 * - removing one ends everything the person holds (sessions, refresh families, access tokens
 *   issued until then), as a new password does: which sign-in came through which connector is not
 *   recorded, and whoever signed in through it must not stay signed in.
 */
import type { Config } from '../config.js';
import { isLocalPasswordHash } from '../crypto/password.js';
import { relyingParty } from '../mfa/webauthn.js';
import type { AnotherWayIn, ConnectorType, RemovedIdentityRecord, Store, UserIdentityRecord, UserRecord } from '../store/store.js';

export interface LinkedIdentity {
  connectorId: string;
  /** The connector's display name ("Acme SSO"), or its id when it has none. */
  connectorName: string;
  connectorType: ConnectorType | undefined;
  subject: string;
  linkedAt: number;
  lastSignInAt: number | undefined;
}

/** "Acme SSO", "Acme SSO and GitHub", "Acme SSO, GitHub, and Corp": each service once, for a sentence in `language`. */
export function serviceNames(identities: readonly Pick<LinkedIdentity, 'connectorName'>[], language = 'en'): string {
  return new Intl.ListFormat(language, { type: 'conjunction' }).format([...new Set(identities.map((i) => i.connectorName))]);
}

/** A person's linked identities with their connectors' names, oldest first. */
export async function linkedIdentities(store: Store, userId: string): Promise<LinkedIdentity[]> {
  const [identities, connectors] = await Promise.all([store.listIdentities(userId), store.listConnectors()]);
  const byId = new Map(connectors.map((c) => [c.id, c]));
  return identities.map((i: UserIdentityRecord) => ({
    connectorId: i.connectorId,
    connectorName: byId.get(i.connectorId)?.name || i.connectorId,
    connectorType: byId.get(i.connectorId)?.type,
    subject: i.subject,
    linkedAt: i.createdAt,
    lastSignInAt: i.lastSignInAt,
  }));
}

export interface RemovedIdentity extends RemovedIdentityRecord {
  connectorName: string;
}

/** The identities removed from a person (for the console's "Allow again"), most recent first. */
export async function removedIdentities(store: Store, userId: string): Promise<RemovedIdentity[]> {
  const [removed, connectors] = await Promise.all([store.listRemovedIdentities(userId), store.listConnectors()]);
  const names = new Map(connectors.map((c) => [c.id, c.name || c.id]));
  return removed.map((r) => ({ ...r, connectorName: names.get(r.connectorId) ?? r.connectorId }));
}

/** What counts as another way in on this server: a passkey, only where a passkey signs in on its own. */
export function anotherWayIn(config: Config): AnotherWayIn {
  return { passkeysSignIn: relyingParty(config) !== undefined };
}

/** A password this server checks, in any format it verifies (users an upstream made have none: `upstream`). */
export function hasUsablePassword(user: Pick<UserRecord, 'passwordHash'>): boolean {
  return isLocalPasswordHash(user.passwordHash);
}

/**
 * The connectors whose identities the person may remove themselves (for the page: the store
 * decides again, atomically, when the form is sent).
 */
export async function removableConnectors(store: Store, config: Config, user: UserRecord, identities: readonly LinkedIdentity[]): Promise<Set<string>> {
  const connectors = new Set(identities.map((i) => i.connectorId));
  if (hasUsablePassword(user)) return connectors;
  const passkeys = anotherWayIn(config).passkeysSignIn && (await store.listPasskeys(user.id)).length > 0;
  if (passkeys) return connectors;
  return new Set([...connectors].filter((id) => [...connectors].some((other) => other !== id)));
}
