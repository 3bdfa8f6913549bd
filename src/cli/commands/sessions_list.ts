/**
 * `latchkey sessions list [--user U] [--json]`: every live sign-in — browser sessions and
 * refresh-token families (devices, CLIs, apps) — with where it was approved from and when it was
 * made and last used, so an operator can find and end one (`sessions revoke <id>`). The device is
 * named as the pages name it ("Chrome on macOS"); the JSON keeps the raw User-Agent as `software`.
 */
import { deviceName } from '../../http/device_description.js';
import { revocationTime } from '../revocation_time.js';
import { CommandError, defineCommand } from '../command.js';
import { isoTime, json, table } from '../output.js';

export const sessionsListCommand = defineCommand({
  usage: 'latchkey sessions list [--user <username>] [--json]',
  positionals: { min: 0, max: 0 },
  options: { user: { type: 'string' }, json: { type: 'boolean' } },
  async run(context) {
    const store = await context.store();
    const username = context.values.user;
    const user = username === undefined ? undefined : await store.findUserByUsername(username);
    if (username !== undefined && !user) throw new CommandError(`no user "${username}"`);
    const now = await revocationTime(store);
    const [sessions, families, users] = await Promise.all([store.listSessions(user?.id, now), store.listRefreshFamilies(user?.id, now), store.listUsers()]);
    const usernameOf = new Map(users.map((u) => [u.id, u.username]));
    const rows = [
      ...sessions.map((s) => ({
        id: s.id,
        kind: 'browser' as const,
        user: usernameOf.get(s.userId) ?? s.userId,
        client_id: null,
        from: s.ip ?? null,
        device: deviceName(s.userAgent),
        software: s.userAgent ?? null,
        created_at: isoTime(s.createdAt),
        last_used_at: isoTime(s.lastSeenAt ?? s.createdAt),
        expires_at: isoTime(s.expiresAt),
      })),
      ...families.map((f) => ({
        id: f.familyId,
        kind: 'app' as const,
        user: usernameOf.get(f.userId) ?? f.userId,
        client_id: f.clientId,
        from: f.approvedIp ?? null,
        device: deviceName(f.approvedUserAgent),
        software: f.approvedUserAgent ?? null,
        created_at: isoTime(f.createdAt),
        last_used_at: isoTime(f.lastUsedAt),
        expires_at: isoTime(f.expiresAt),
      })),
    ].sort((a, b) => (a.last_used_at < b.last_used_at ? 1 : a.last_used_at > b.last_used_at ? -1 : 0));
    if (context.values.json) {
      context.stdout.write(json(rows));
    } else {
      context.stdout.write(
        table(
          rows.map((r) => [r.id, r.kind, r.user, r.client_id ?? '', r.device, r.from ?? '', r.created_at, r.last_used_at]),
          ['ID', 'KIND', 'USER', 'CLIENT', 'DEVICE', 'FROM', 'CREATED', 'LAST USED'],
        ),
      );
    }
    return 0;
  },
});
