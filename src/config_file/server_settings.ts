/**
 * The `server` section of a configuration file: every setting of the environment (config.ts) by
 * its variable's name without the `LATCHKEY_` prefix, in lower case (`issuer`, `db`,
 * `access_token_ttl`, `port`). Values have their natural YAML types — text, numbers, booleans —
 * and are checked by the very zod rule that checks the variable, so a file and the environment
 * accept the same things. A secret setting (its metadata says `secret`) takes only a reference,
 * `{ env: NAME }` or `{ file: PATH }`: a file meant to live in git never holds a secret's value.
 * This module only describes the section; read_server_settings.ts reads a file and resolves the
 * references, and the rest of the file's schema plugs `serverSettingsSchema` in.
 */
import { z } from 'zod';
import { environmentSchema } from '../config.js';
import { configurationSettings } from '../config_reference.js';
import type { SettingMeta } from '../config_metadata.js';
import { isPostgresUrl } from '../store/database_url.js';
import { closestName } from './did_you_mean.js';

/** A value given elsewhere: an environment variable of the server's process, or a file (a mounted secret). */
export type SettingReference = { readonly env: string } | { readonly file: string };

/** What one setting of the section holds, as the file gives it. */
export type ServerSettingValue = string | number | boolean | SettingReference;

const envReferenceSchema = z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'env must name an environment variable') });
const fileReferenceSchema = z.strictObject({ file: z.string().trim().min(1, 'file must be a path') });
const referenceSchema = z.union([envReferenceSchema, fileReferenceSchema]);

export function isSettingReference(value: unknown): value is SettingReference {
  return referenceSchema.safeParse(value).success;
}

/** The section's key of a setting: its variable without the `LATCHKEY_` prefix, in lower case (`PORT` is `port`). */
export function settingKey(variable: string): string {
  return variable.replace(/^LATCHKEY_/, '').toLowerCase();
}

/** One setting as the section knows it. */
export interface ServerSetting {
  /** The key in the file. */
  readonly key: string;
  /** The environment variable. */
  readonly variable: string;
  readonly meta: SettingMeta;
}

/** Every setting, in the order of the configuration reference. */
export const serverSettings: readonly ServerSetting[] = configurationSettings().map(({ name, meta }) => ({ key: settingKey(name), variable: name, meta }));

const settingKeys = serverSettings.map((s) => s.key);

/** A value's text as the variable would carry it: YAML's `900` and `true` are the variable's "900" and "true". */
export function settingText(value: string | number | boolean): string {
  return String(value);
}

/**
 * Checks `text` with the variable's own rule; the problems, each without the variable's name the
 * message starts with (the caller names the path instead), and never with the value itself.
 */
export function settingProblems(setting: ServerSetting, text: string): string[] {
  const field = environmentSchema.shape[setting.variable as keyof typeof environmentSchema.shape] as z.ZodType;
  const parsed = field.safeParse(text);
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => withoutVariable(issue.message, setting.variable));
  if (parsed.success && setting.variable === 'LATCHKEY_DB' && isPostgresUrl(text) && hasPassword(text)) {
    // The database URL is a secret as soon as it carries a password: refused as a literal, like the secret settings.
    problems.push(
      'a postgres:// URL with a password is a secret: give it as { env: NAME } or { file: PATH }, or leave the password out (PGPASSWORD or ~/.pgpass)',
    );
  }
  return problems;
}

function hasPassword(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.password !== '' || parsed.searchParams.has('password');
  } catch {
    return false;
  }
}

function withoutVariable(message: string, variable: string): string {
  return message.startsWith(`${variable} `) ? message.slice(variable.length + 1) : message;
}

const secretMessage = 'is a secret: give it as a reference { env: NAME } or { file: PATH }, never as a value';

/** A setting's field: a secret takes a reference only; any other setting a value its variable's rule accepts, or a reference. */
function fieldOf(setting: ServerSetting): z.ZodType<ServerSettingValue | undefined> {
  const about = { description: setting.meta.description.replace(/`/g, '') };
  if (setting.meta.secret) {
    return z.union([envReferenceSchema, fileReferenceSchema], { error: secretMessage }).optional().meta(about);
  }
  return z
    .union([z.string(), z.number(), z.boolean(), envReferenceSchema, fileReferenceSchema], {
      error: 'must be text, a number, true or false, or a reference { env: NAME } or { file: PATH }',
    })
    .optional()
    .meta(about)
    .superRefine((value, ctx) => {
      if (value === undefined || typeof value === 'object') return;
      for (const message of settingProblems(setting, settingText(value))) ctx.addIssue({ code: 'custom', message });
    });
}

/**
 * The `server` section's schema: every problem reported at once, each at its path (an unknown key
 * with the setting it most likely meant).
 */
export const serverSettingsSchema = z
  .looseObject(Object.fromEntries(serverSettings.map((setting) => [setting.key, fieldOf(setting)])))
  .superRefine(
    (section, ctx) => {
      // Run even when the section is not a mapping (its own issue says so): nothing to look at then.
      const given: unknown = section;
      if (typeof given !== 'object' || given === null) return;
      for (const key of Object.keys(given)) {
        if (settingKeys.includes(key)) continue;
        const meant = closestName(key.replace(/^latchkey_/i, ''), settingKeys);
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `unknown setting${meant === undefined ? '' : `: did you mean "${meant}"?`} (the settings are those of docs/configuration.md, named without LATCHKEY_ in lower case)`,
        });
      }
    },
    // Unknown keys are reported along with the problems of the known ones, not after they are fixed.
    { when: () => true },
  )
  .meta({
    description: 'The server settings: each LATCHKEY_* variable by its name without the prefix, in lower case. The environment wins over them.',
    // Editors flag an unknown key as the loader does (the schema itself is loose only so that the loader can suggest the key meant).
    additionalProperties: false,
  });

export type ServerSettingsSection = Readonly<Record<string, ServerSettingValue | undefined>>;
