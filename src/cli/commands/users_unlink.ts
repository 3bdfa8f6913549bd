/**
 * `latchkey users unlink <username> <connector>`: removes the upstream identities of that connector
 * linked to the person — a link made by email (--trust-email) is a way into the account that a new
 * password does not touch. The upstream account can then no longer sign in here (neither as that
 * user, nor linked again by its email, nor as a new account; connectors/linked_identities.ts), and
 * everything the person holds ends, as `users revoke-tokens` does. Audited. Unlike the person on
 * /account, an operator may take the last way in; the command says so.
 */
import { unlinkConnector } from '../../connectors/identity_unlinking.js';
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { revocationTime } from '../revocation_time.js';
import { managementClient } from '../management_client.js';
import type { UserView } from '../../management/user_view.js';

export const usersUnlinkCommand = defineCommand({
  usage: 'latchkey users unlink <username> <connector>',
  help: [
    'Removes the identities at <connector> (its id, as `connectors list` shows) linked to the person, as',
    '`users list --json` lists them under "identities". That upstream account can no longer sign in here:',
    'not as this user, not linked again by its email, not as a new account (an administrator can allow it',
    'again in the console). Every sign-in of the person ends (browser sessions, refresh tokens, access',
    'tokens at userinfo and introspection), as with `users revoke-tokens`. Exit code 1 when there is no',
    'such user or link.',
    '',
  ].join('\n'),
  positionals: { min: 2, max: 2 },
  options: {},
  remote: true,
  async run(context) {
    const [username = '', connectorId = ''] = context.positionals;
    const unlinked = (who: string) =>
      context.stderr.write(`Unlinked ${connectorId} from ${who}: that upstream account can no longer sign in here, and every sign-in of theirs has ended\n`);
    const noWayIn = (who: string) =>
      context.stderr.write(
        `warning: ${who} now has no way to sign in (no password, passkey or other linked identity): \`latchkey users passwd ${who}\` gives one\n`,
      );
    const remote = managementClient(context);
    if (remote) {
      const path = `/users/${encodeURIComponent(username)}`;
      const user = await remote.call<UserView>('GET', path);
      const answer = await remote.call<{ can_sign_in: boolean }>('DELETE', `${path}/identities/${encodeURIComponent(connectorId)}`);
      unlinked(user.username);
      if (!answer.can_sign_in) noWayIn(user.username);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    const outcome = await unlinkConnector(store, user, connectorId, await revocationTime(store));
    if (!outcome.ok) throw new CommandError(outcome.refusal);
    await cliAudit(context, 'user.identity_unlinked', {
      username: user.username,
      userId: user.id,
      connectorId,
      subjects: outcome.removed.map((i) => i.subject),
      source: 'cli',
    });
    unlinked(user.username);
    if (!outcome.canSignIn) noWayIn(user.username);
    return 0;
  },
});
