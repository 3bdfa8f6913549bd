import { epochSeconds, systemClock } from '../../clock.js';
import { profileOptions, profileOptionsHelp, userChangeFrom } from '../../directory/profile_claims.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { visible } from '../terminal_text.js';
import { mailSecurityNotice } from '../security_notice.js';
import { managementClient } from '../management_client.js';
import type { UserView } from '../../management/user_view.js';

export const usersUpdateCommand = defineCommand({
  usage: 'latchkey users update <username> [--email <email>] [--name <full name>] [profile claim options] [--clear <claim>]...',
  help: [
    'Options:',
    '  --email <email>                a new address (counted as verified: an operator entered it)',
    '  --name <full name>             name',
    '  --clear <claim>                removes a claim, by its OIDC name: name, given_name, phone_number, address, …;',
    '                                 an address member (locality, postal_code, …) removes just that part; repeatable',
    '',
    profileOptionsHelp,
    '',
    'The options given replace those claims and leave the others as they are; address options replace those parts',
    "of the stored address. The user's updated_at becomes now. Nothing else changes: sessions and tokens stay.",
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { email: { type: 'string' }, name: { type: 'string' }, clear: { type: 'string', multiple: true }, ...profileOptions },
  remote: true,
  async run(context) {
    const now = epochSeconds(systemClock);
    const username = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      // The same change worked out from the person as the server has them; the server mails the notice.
      const path = `/users/${encodeURIComponent(username)}`;
      const stored = await remote.call<UserView>('GET', path);
      const { change, changedClaims } = userChangeFrom({ email: stored.email, name: stored.name ?? undefined, profile: stored.profile }, context.values, now);
      if (changedClaims.length === 0) {
        context.stderr.write(`Nothing changed: ${visible(stored.username)} already has these values\n`);
        return 0;
      }
      await remote.call('PATCH', path, change);
      context.stderr.write(`Updated ${visible(stored.username)}: ${changedClaims.join(', ')}\n`);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    const { change, changedClaims } = userChangeFrom(user, context.values, now);
    if (changedClaims.length === 0) {
      context.stderr.write(`Nothing changed: ${visible(user.username)} already has these values\n`);
      return 0;
    }
    if (!(await store.updateUser(user.username, change, now))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.updated', { username: user.username, claims: changedClaims });
    context.stderr.write(`Updated ${visible(user.username)}: ${changedClaims.join(', ')}\n`);
    const updated = await store.findUserById(user.id);
    if (updated && updated.email.toLowerCase() !== user.email.toLowerCase())
      await mailSecurityNotice(context, updated, { kind: 'email_changed', previous: user.email });
    return 0;
  },
});
