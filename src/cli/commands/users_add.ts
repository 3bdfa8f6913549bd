import { epochSeconds, systemClock } from '../../clock.js';
import { operatorEnteredUser } from '../../directory/local_users.js';
import { randomUuid } from '../../crypto/secrets.js';
import { hashPassword } from '../../crypto/password.js';
import { validEmail, validName, validPassword, validUsername } from '../../directory/validation.js';
import { newUserProfile, profileOptions, profileOptionsHelp } from '../../directory/profile_claims.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';
import { obtainPassword } from '../password_input.js';

export const usersAddCommand = defineCommand({
  usage: 'latchkey users add <username> --email <email> [--name <full name>] [profile claim options] [--password-stdin]',
  help: [
    'Options:',
    '  --email <email>                the address (counted as verified: an operator entered it)',
    '  --name <full name>             name',
    '  --password-stdin               read the password from stdin (otherwise asked for, or generated and printed once)',
    '',
    profileOptionsHelp,
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: { email: { type: 'string' }, name: { type: 'string' }, 'password-stdin': { type: 'boolean' }, ...profileOptions },
  remote: true,
  async run(context) {
    const now = epochSeconds(systemClock);
    const username = validUsername(context.positionals[0] ?? '');
    const email = validEmail(context.values.email);
    const name = validName(context.values.name);
    const profile = newUserProfile(context.values, now);
    const remote = managementClient(context);
    if (remote) {
      // The password is read as on the database and sent in the body (--server is https but to this machine).
      const { password, generated } = await obtainPassword(context, context.values['password-stdin'] === true);
      validPassword(password);
      await remote.call('POST', '/users', { username, email, ...(name === undefined ? {} : { name }), profile, password });
      context.stderr.write(`Created user ${username}\n`);
      if (generated) context.stdout.write(`Password for ${username} (shown only once): ${password}\n`);
      return 0;
    }
    const store = await context.store();
    if (await store.findUserByUsername(username)) throw new CommandError(`user "${username}" already exists`);
    const { password, generated } = await obtainPassword(context, context.values['password-stdin'] === true);
    validPassword(password);
    try {
      await store.createUser(operatorEnteredUser({ id: randomUuid(), username, email, name, passwordHash: await hashPassword(password), profile, now }));
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`user "${username}" already exists`);
      throw err;
    }
    await cliAudit(context, 'user.created', { username });
    context.stderr.write(`Created user ${username}\n`);
    if (generated) context.stdout.write(`Password for ${username} (shown only once): ${password}\n`);
    return 0;
  },
});
