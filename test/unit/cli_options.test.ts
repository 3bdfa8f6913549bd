/**
 * A command's option values are typed by its own parseArgs options (defineCommand): what run() reads
 * is what node:util parseArgs gives for them, checked by the compiler (npm run typecheck) and here at
 * run time through the same parse the dispatcher uses.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineCommand, type CommandServices, type OptionValues } from '../../src/cli/command.js';

const options = {
  profile: { type: 'string' },
  host: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

/** What a command needs from the dispatcher; these commands use none of it. */
const services = {} as CommandServices;

describe('defineCommand', () => {
  it('types each value by its option: a string, an array for a repeatable one, a boolean for a flag; absent when not given', () => {
    expectTypeOf<OptionValues<typeof options>>().toEqualTypeOf<{ profile?: string; host?: string[]; json?: boolean }>();
  });

  it('runs with the values parsed from the arguments, and the positionals', async () => {
    let seen: { values: OptionValues<typeof options>; positionals: string[] } | undefined;
    const command = defineCommand({
      usage: 'latchkey example [--profile P] [--host H]… [--json] <thing>',
      positionals: { min: 1, max: 1 },
      options,
      run(context) {
        seen = { values: context.values, positionals: context.positionals };
        return Promise.resolve(0);
      },
    });
    const parsed = command.parse(['thing', '--profile', 'work', '--host', 'a.example', '--host', 'b.example', '--json']);
    expect(parsed.positionals).toEqual(['thing']);
    expect(await parsed.run(services)).toBe(0);
    expect(seen).toEqual({ values: { profile: 'work', host: ['a.example', 'b.example'], json: true }, positionals: ['thing'] });
  });

  it('refuses an option the command does not take, and a string option without its value, as parseArgs words it', () => {
    const command = defineCommand({ usage: 'latchkey example', positionals: { min: 0, max: 0 }, options, run: () => Promise.resolve(0) });
    expect(() => command.parse(['--nope'])).toThrow(/Unknown option '--nope'/);
    expect(() => command.parse(['--profile'])).toThrow(/Option '--profile <value>' argument missing/);
  });
});
