/**
 * `latchkey users passwd <username>`: a new password, which ends every sign-in of theirs; the
 * person is told by mail when LATCHKEY_SMTP_URL is set.
 */
import { revocationTime } from '../revocation_time.js';
import { hashPassword } from '../../crypto/password.js';
import { cliAudit } from '../audit_log.js';
import { validPassword } from '../../directory/validation.js';
import { CommandError, defineCommand } from '../command.js';
import { obtainPassword } from '../password_input.js';
import { mailSecurityNotice } from '../security_notice.js';
import { managementClient } from '../management_client.js';

export const usersPasswdCommand = defineCommand({
  usage: 'latchkey users passwd <username> [--password-stdin]',
  positionals: { min: 1, max: 1 },
  options: { 'password-stdin': { type: 'boolean' } },
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const done = (password: string, generated: boolean) => {
      context.stderr.write(`Changed the password of ${username}; their sessions, refresh tokens and access tokens have ended\n`);
      if (generated) context.stdout.write(`New password for ${username} (shown only once): ${password}\n`);
    };
    const remote = managementClient(context);
    if (remote) {
      // As on the database: a person who is not there is refused before the password is asked for.
      const path = `/users/${encodeURIComponent(username)}`;
      await remote.call('GET', path);
      const { password, generated } = await obtainPassword(context, context.values['password-stdin'] === true);
      validPassword(password);
      // In the body, over https (managementServer allows plain http only to this machine); the server mails the notice.
      await remote.call('PATCH', path, { password });
      done(password, generated);
      return 0;
    }
    const store = await context.store();
    const user = await store.findUserByUsername(username);
    if (!user) throw new CommandError(`no user "${username}"`);
    const { password, generated } = await obtainPassword(context, context.values['password-stdin'] === true);
    validPassword(password);
    if (!(await store.setUserPassword(username, await hashPassword(password), await revocationTime(store)))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.password_changed', { username });
    done(password, generated);
    await mailSecurityNotice(context, user, { kind: 'password_changed', how: 'changed' });
    return 0;
  },
});
