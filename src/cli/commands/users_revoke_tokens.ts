import { revocationTime } from '../revocation_time.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';

export const usersRevokeTokensCommand = defineCommand({
  usage: 'latchkey users revoke-tokens <username>',
  help: [
    'Signs the person out everywhere (a lost laptop, a leaked token): their browser sessions end, every',
    'refresh token is revoked, and access tokens issued until now are refused by the userinfo and',
    'introspection endpoints. APIs that check JWTs themselves see it only when the tokens expire',
    '(LATCHKEY_ACCESS_TOKEN_TTL). The password stays as it is.',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {},
  remote: true,
  async run(context) {
    const username = context.positionals[0] ?? '';
    const remote = managementClient(context);
    if (remote) {
      await remote.call('POST', `/users/${encodeURIComponent(username)}/revoke-tokens`);
      context.stderr.write(`Ended every sign-in of ${username}\n`);
      return 0;
    }
    const store = await context.store();
    if (!(await store.revokeUserTokens(username, await revocationTime(store)))) throw new CommandError(`no user "${username}"`);
    await cliAudit(context, 'user.tokens_revoked', { username });
    context.stderr.write(`Ended every sign-in of ${username}\n`);
    return 0;
  },
});
