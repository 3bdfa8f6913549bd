/**
 * A person's live sign-ins as the pages list them — browser sessions and app sign-ins (refresh
 * token families) — for their own /account page and for the admin console's user page.
 */
import type { RefreshFamilySummary, SessionRecord } from '../store/store.js';
import { deviceName } from './device_description.js';

export type SignInRow = SignInRowCommon & ({ kind: 'browser'; clientId: undefined } | { kind: 'app'; /** The app's client. */ clientId: string });

interface SignInRowCommon {
  /** The session's public id, or the family id: what the page's end/revoke form names. */
  id: string;
  /** The browser session this page is being shown in. */
  current: boolean;
  from: string | undefined;
  /** The browser or program, named as people know it (never the raw User-Agent). */
  device: string;
  created: string;
  lastUsed: string;
  sortKey: number;
}

/** The current session first, then the most recently used. `when` formats epoch seconds for the page. */
export function signInRows(
  sessions: readonly SessionRecord[],
  families: readonly RefreshFamilySummary[],
  currentSessionId: string | undefined,
  when: (epochSeconds: number) => string,
): SignInRow[] {
  return [
    ...sessions.map((s) => ({
      id: s.id,
      kind: 'browser' as const,
      clientId: undefined,
      current: s.id === currentSessionId,
      from: s.ip,
      device: deviceName(s.userAgent),
      created: when(s.createdAt),
      lastUsed: when(s.lastSeenAt ?? s.createdAt),
      sortKey: s.lastSeenAt ?? s.createdAt,
    })),
    ...families.map((f) => ({
      id: f.familyId,
      kind: 'app' as const,
      clientId: f.clientId,
      current: false,
      from: f.approvedIp,
      device: deviceName(f.approvedUserAgent),
      created: when(f.createdAt),
      lastUsed: when(f.lastUsedAt),
      sortKey: f.lastUsedAt,
    })),
  ].sort((a, b) => Number(b.current) - Number(a.current) || b.sortKey - a.sortKey);
}
