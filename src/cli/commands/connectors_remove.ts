/**
 * `latchkey connectors remove`: the connector and the identities bound to it go; the users it
 * created stay (their `sub` may be in other systems' records) but can no longer sign in, so
 * everything they hold ends too — sessions, refresh tokens, and access tokens at userinfo and
 * introspection — as `users revoke-tokens` does. Local accounts linked to it keep theirs: they
 * sign in with their password.
 */
import { revocationTime } from '../revocation_time.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, type Command } from '../command.js';

export const connectorsRemoveCommand: Command = {
  path: ['connectors', 'remove'],
  summary: 'Remove an upstream identity provider (the users it created stay, signed out, and can no longer sign in through it)',
  usage: 'latchkey connectors remove <id>',
  positionals: { min: 1, max: 1 },
  options: {},
  async run(context) {
    const id = context.positionals[0] ?? '';
    const store = await context.store();
    if (!(await store.removeConnector(id))) throw new CommandError(`no connector "${id}"`);
    // `local` is the source of administrators' accounts: a connector of that id (possible before
    // the id was reserved) made none of them.
    const created = id === 'local' ? [] : (await store.listUsers()).filter((u) => u.source === id);
    const now = await revocationTime(store);
    const notSignedOut: string[] = [];
    for (const user of created) {
      try {
        await store.revokeUserTokens(user.username, now);
      } catch {
        notSignedOut.push(user.username);
      }
    }
    cliAudit(context, 'connector.removed', { connectorId: id, usersSignedOut: created.length - notSignedOut.length });
    const signedOut = created.length - notSignedOut.length;
    context.stderr.write(`Removed connector ${id}${signedOut > 0 ? `; signed out the ${signedOut} user${signedOut === 1 ? '' : 's'} it created` : ''}\n`);
    if (notSignedOut.length > 0) {
      throw new CommandError(`could not sign out ${notSignedOut.join(', ')}: run latchkey users revoke-tokens <username> for each`);
    }
    return 0;
  },
};
