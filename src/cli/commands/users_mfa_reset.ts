/**
 * `latchkey users mfa-reset <username>`: for a person who lost their phone and their recovery
 * codes — their authenticator app, passkeys and recovery codes are removed, so their next sign-in
 * is with the password alone (and, under LATCHKEY_MFA=required, sets up a new factor at once).
 * Audited, and told to the person by mail (LATCHKEY_SMTP_URL). Their sessions stay: check who is
 * asking before you run it. An account holding `admin` then needs `users mfa-enroll` for its next
 * first factor.
 */
import { cliAudit } from '../audit_log.js';
import { CommandError, defineCommand } from '../command.js';
import { visible } from '../terminal_text.js';
import { mailSecurityNotice } from '../security_notice.js';
import { managementClient } from '../management_client.js';
import type { UserView } from '../../management/user_view.js';

export const usersMfaResetCommand = defineCommand({
  usage: 'latchkey users mfa-reset <username>',
  help: [
    'For a person who lost their second factor and their recovery codes. Their next sign-in needs only',
    'their password; with LATCHKEY_MFA=required they set up a new factor right then. Make sure it is',
    'really them asking: this undoes what protects the account from a stolen password. Someone holding',
    'the admin role then needs `latchkey users mfa-enroll` to set up a new factor.',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const said = (who: string, removed: boolean) =>
      context.stderr.write(removed ? `Removed the second factors of ${visible(who)}\n` : `${visible(who)} had no second factors\n`);
    const remote = managementClient(context);
    if (remote) {
      const path = `/users/${encodeURIComponent(username)}`;
      const user = await remote.call<UserView>('GET', path);
      // The server mails the person, as the console does.
      const reset = await remote.call<{ had_factors: boolean }>('POST', `${path}/mfa-reset`);
      said(user.username, reset.had_factors);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    const removed = await store.resetSecondFactors(user.id);
    await cliAudit(context, 'user.second_factors_reset', { username, userId: user.id, hadFactors: removed });
    said(user.username, removed);
    if (removed) await mailSecurityNotice(context, user, { kind: 'factors_reset' });
    return 0;
  },
});
