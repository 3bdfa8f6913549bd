/**
 * `latchkey config apply -f FILE [--dry-run] [--prune]`: makes the database hold what the file
 * declares. The plan is printed first (create, update with the fields that change, delete with
 * --prune); then it is applied in one transaction. A bad file changes nothing and exits 3 with
 * every problem, each naming its place in the file.
 */
import { epochSeconds, systemClock } from '../../clock.js';
import { applyConfigurationFile } from '../../config_file/apply.js';
import { ConfigurationFileError } from '../../config_file/load.js';
import { planText } from '../../config_file/plan.js';
import { configuredKeyMaterial } from '../../config_file/server_key_material.js';
import { CommandError, defineCommand, exitCodes } from '../command.js';

export const configApplyCommand = defineCommand({
  usage: 'latchkey config apply -f <file> [--dry-run] [--prune]',
  help: [
    'Options:',
    '  -f, --file <file>  the configuration file (YAML or JSON); secrets in it are references: { env: NAME } or { file: PATH }',
    '  --dry-run          print the plan and change nothing',
    '  --prune            also delete the objects this file manages but no longer declares (never others)',
    '',
    'Exit codes: 0 applied (or nothing to do, or a dry run), 3 the file has problems (each is printed).',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { file: { type: 'string', short: 'f' }, 'dry-run': { type: 'boolean' }, prune: { type: 'boolean' } },
  async run(context) {
    const file = context.values.file;
    if (file === undefined || file === '') throw new CommandError('-f <file> is required: the configuration file to apply', exitCodes.usage);
    const dryRun = context.values['dry-run'] === true;
    let result;
    try {
      result = await applyConfigurationFile(file, {
        store: await context.store(),
        secretBox: await context.secretBox(),
        env: context.env,
        now: epochSeconds(systemClock),
        prune: context.values.prune === true,
        dryRun,
        actor: 'cli',
        issuer: context.config().issuer,
        keyMaterial: configuredKeyMaterial(context.config(), context.env),
      });
    } catch (err) {
      if (!(err instanceof ConfigurationFileError)) throw err;
      context.stderr.write(`${err.message}\n`);
      return exitCodes.config;
    }
    context.stdout.write(planText(result.plan));
    if (dryRun) context.stderr.write('Dry run: nothing was changed.\n');
    else if (result.plan.length > 0) context.stderr.write(`Applied ${result.plan.length} change${result.plan.length === 1 ? '' : 's'} from ${result.path}\n`);
    return exitCodes.ok;
  },
});
