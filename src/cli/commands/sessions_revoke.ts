/**
 * `latchkey sessions revoke <id>`: ends one sign-in by the id `sessions list` shows — a browser
 * session (signed out at its next request) or a refresh-token family (its next refresh is
 * invalid_grant; its access tokens are refused at userinfo and introspection). Audited.
 */
import { endSignIn } from '../../account/end_sign_in.js';
import type { SessionView } from '../../management/session_resource.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { managementClient } from '../management_client.js';
import { revocationTime } from '../revocation_time.js';
import { visible } from '../terminal_text.js';

export const sessionsRevokeCommand = defineCommand({
  usage: 'latchkey sessions revoke <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const id = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      // Read first, to say what was ended as on the database; the server ends (and audits) it.
      const path = `/sessions/${encodeURIComponent(id)}`;
      const signIn = await remote.call<SessionView>('GET', path);
      await remote.call('DELETE', path);
      context.stderr.write(signIn.kind === 'browser' ? `Ended browser session ${id}\n` : `Ended the sign-in of ${visible(signIn.client_id ?? '')} (${id})\n`);
      return 0;
    }
    const store = await context.store();
    const ended = await endSignIn(store, id, await revocationTime(store));
    if (ended?.kind === 'browser') {
      await cliAudit(context, 'session.revoked', { kind: 'browser', userId: ended.session.userId, sessionId: id });
      context.stderr.write(`Ended browser session ${id}\n`);
      return 0;
    }
    if (ended?.kind === 'app') {
      const { family } = ended;
      await cliAudit(context, 'session.revoked', { kind: 'app', userId: family.userId, clientId: family.clientId, familyId: id });
      context.stderr.write(`Ended the sign-in of ${visible(family.clientId)} (${id})\n`);
      return 0;
    }
    throw new CommandError(`no live sign-in "${id.slice(0, 80)}"`);
  },
});
