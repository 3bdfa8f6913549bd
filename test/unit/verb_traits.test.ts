/**
 * The table of what each verb is (src/store/verbs.ts) is what the wrappers go by: the directory
 * cache drops what it holds when a verb declared to change the directory runs. The compiler makes
 * sure every verb is in the table; this makes sure the declarations say what the SQL does, by
 * reading the one implementation's source (never at run time): a verb writes the directory when
 * it, or a helper it calls, writes one of the tables the directory is made of.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { verbNames, verbTraits } from '../../src/store/verbs.js';

const source = readFileSync(fileURLToPath(new URL('../../src/store/sql/sql_store.ts', import.meta.url)), 'utf8');
const directoryWrite = /\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:clients|users|apis|connectors|user_roles|roles|role_permissions)\b/;

/** The bodies of the module's generator helpers and of the class's verbs, by name. */
function bodies(): Map<string, string> {
  const found = new Map<string, string>();
  const starts = [...source.matchAll(/\n(?:function\* | {2}async )(\w+)\(/g)];
  starts.forEach((match, i) => {
    const end = i + 1 < starts.length ? starts[i + 1]!.index : source.length;
    found.set(match[1]!, source.slice(match.index, end));
  });
  return found;
}

function writesDirectory(name: string, all: Map<string, string>, seen = new Set<string>()): boolean {
  if (seen.has(name)) return false;
  seen.add(name);
  const body = all.get(name) ?? '';
  if (directoryWrite.test(body)) return true;
  // A helper is called (`name(`) or, for a verb's steps, handed to this.steps (`nameSteps,`).
  const called = [...body.matchAll(/\b(\w+)\(|\b(\w+Steps)\b/g)]
    .map((m) => (m[1] ?? m[2])!)
    .filter((callee) => callee !== name && all.has(callee) && !(callee in verbTraits));
  return called.some((callee) => writesDirectory(callee, all, seen));
}

describe('the verb table', () => {
  it('declares exactly the verbs whose SQL writes clients, users, user roles, roles and their permissions, APIs or connectors', () => {
    const all = bodies();
    const declared = verbNames.filter((name) => verbTraits[name].directory === true).sort();
    // A store's own verbs (ping, close …) are not in the one implementation: they write no directory table.
    const found = verbNames.filter((name) => all.has(name) && writesDirectory(name, all)).sort();
    expect(declared).toEqual(found);
  });

  it('classifies every verb as a read or a write as its SQL is', () => {
    const all = bodies();
    for (const name of verbNames) {
      const body = all.get(name);
      if (body === undefined || verbTraits[name].kind === 'outside') continue;
      const writes =
        /\b(?:INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/.test(body) ||
        /yield\* (?:insert|referring|lock)\(/.test(body) ||
        [...body.matchAll(/yield\* (\w+)\(/g)].some((m) => /^(?:insert|spend|revoke|record|lock|end)/.test(m[1]!));
      if (writes) expect({ verb: name, kind: verbTraits[name].kind }).toEqual({ verb: name, kind: 'write' });
    }
  });
});
