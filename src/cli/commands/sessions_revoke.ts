/**
 * `latchkey sessions revoke <id>`: ends one sign-in by the id `sessions list` shows — a browser
 * session (signed out at its next request) or a refresh-token family (its next refresh is
 * invalid_grant; its access tokens are refused at userinfo and introspection). Audited.
 */
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { revocationTime } from '../revocation_time.js';
import { visible } from '../terminal_text.js';

export const sessionsRevokeCommand = defineCommand({
  usage: 'latchkey sessions revoke <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const id = context.positionals[0] ?? '';
    const store = await context.store();
    const session = await store.endSessionById(id, undefined);
    if (session) {
      await cliAudit(context, 'session.revoked', { kind: 'browser', userId: session.userId, sessionId: id });
      context.stderr.write(`Ended browser session ${id}\n`);
      return 0;
    }
    const family = await store.revokeRefreshFamilyOf(id, undefined, await revocationTime(store));
    if (family) {
      await cliAudit(context, 'session.revoked', { kind: 'app', userId: family.userId, clientId: family.clientId, familyId: id });
      context.stderr.write(`Ended the sign-in of ${visible(family.clientId)} (${id})\n`);
      return 0;
    }
    throw new CommandError(`no live sign-in "${id.slice(0, 80)}"`);
  },
});
