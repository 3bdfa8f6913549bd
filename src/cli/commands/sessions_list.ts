/**
 * `latchkey sessions list [--user U] [--json]`: every live sign-in — browser sessions and
 * refresh-token families (devices, CLIs, apps) — with where it was approved from and when it was
 * made and last used, so an operator can find and end one (`sessions revoke <id>`). The device is
 * named as the pages name it ("Chrome on macOS"); the JSON keeps the raw User-Agent as `software`.
 */
import { sessionOrder, sessionViews, type SessionView } from '../../management/session_resource.js';
import { revocationTime } from '../revocation_time.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { json, table } from '../output.js';

export const sessionsListCommand = defineCommand({
  usage: 'latchkey sessions list [--user <username>] [--json]',
  positionals: { min: 0, max: 0 },
  options: { user: { type: 'string' }, json: { type: 'boolean' } },
  remote: true,
  readOnly: true,
  async run(context) {
    const username = context.values.user;
    // The same views from either side (management/session_resource.ts), so the output is the same too.
    const remote = managementClient(context);
    let rows: SessionView[];
    if (remote) {
      rows = (await remote.listAll<SessionView>(`/sessions${username === undefined ? '' : `?user=${encodeURIComponent(username)}`}`)).sort(sessionOrder);
    } else {
      const store = await context.store();
      const user = username === undefined ? undefined : await store.findUserByUsername(username);
      if (username !== undefined && !user) throw new CommandError(`no user "${username}"`);
      rows = await sessionViews(store, { userId: user?.id }, await revocationTime(store));
    }
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
