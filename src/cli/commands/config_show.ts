import { loadConfig } from '../../config.js';
import { readServerSettings } from '../../config_file/read_server_settings.js';
import { settingReport } from '../../config_file/setting_report.js';
import { defineCommand } from '../command.js';
import { json, table } from '../output.js';

export const configShowCommand = defineCommand({
  usage: 'latchkey config show [--config FILE] [--json]',
  help: [
    'Every server setting in effect, its value and where it came from: the environment, the',
    'configuration file (LATCHKEY_CONFIG or --config), or the default. Secrets are never shown.',
    '',
    'Options:',
    '  --config FILE   the configuration file to read (instead of LATCHKEY_CONFIG)',
    '  --json          one object per setting: key, variable, value, source, file',
    '',
    'Exit codes: 0 shown, 3 a setting or the file is wrong (every problem listed).',
    '',
  ].join('\n'),
  positionals: { min: 0, max: 0 },
  options: { config: { type: 'string' }, json: { type: 'boolean' } },
  run(context) {
    const file = readServerSettings(context.env, context.values.config);
    const rows = settingReport(loadConfig(context.env, file), context.env, file);
    if (context.values.json) {
      context.stdout.write(json(rows.map((r) => ({ key: r.key, variable: r.variable, value: r.value, source: r.source, file: r.file ?? null }))));
    } else {
      context.stdout.write(
        table(
          rows.map((r) => [r.key, r.value, r.source === 'file' ? `file ${r.file ?? ''}` : r.source]),
          ['SETTING', 'VALUE', 'SOURCE'],
        ),
      );
    }
    return Promise.resolve(0);
  },
});
