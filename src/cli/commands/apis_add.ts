import { epochSeconds, systemClock } from '../../clock.js';
import { validApiIdentifier, validName } from '../../admin/validation.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, type Command } from '../command.js';

export const apisAddCommand: Command = {
  path: ['apis', 'add'],
  summary: 'Register an API (an audience tokens can be issued for)',
  usage: 'latchkey apis add <identifier> [--name <name>]',
  positionals: { min: 1, max: 1 },
  options: { name: { type: 'string' } },
  async run(context) {
    const identifier = validApiIdentifier(context.positionals[0] ?? '');
    try {
      const store = await context.store();
      await store.createApi({
        identifier,
        name: validName(context.values.name as string | undefined) ?? identifier,
        createdAt: epochSeconds(systemClock),
      });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`API "${identifier}" already exists`);
      throw err;
    }
    context.stderr.write(`Registered API ${identifier}\n`);
    return 0;
  },
};
