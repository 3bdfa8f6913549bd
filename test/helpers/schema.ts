/**
 * A database's schema as a sorted list of facts in words both dialects share ("column
 * users.disabled boolean not null default false", "index sessions_expires_at on sessions
 * (expires_at)"), read from the database itself (SQLite's pragmas, PostgreSQL's catalogs), so two
 * databases can be compared fact by fact: the two dialects of one history, or a database upgraded
 * in place with one made from empty.
 *
 * How the dialects' words are mapped onto each other:
 * - types: SQLite INTEGER is PostgreSQL BIGINT ("integer": both 64 bits), PostgreSQL INTEGER is
 *   "int32"; SQLite INTEGER with CHECK (x IN (0, 1)) is PostgreSQL BOOLEAN ("boolean", defaults
 *   0/1 read as false/true); TEXT is TEXT; SQLite REAL is DOUBLE PRECISION ("real");
 * - SQLite's INTEGER PRIMARY KEY AUTOINCREMENT and PostgreSQL's BIGSERIAL (a sequence default) are
 *   an "integer … default autoincrement";
 * - a default is the SQL expression without PostgreSQL's casts ('[]'::text is '[]');
 * - text compared under SQLite's BINARY collation and PostgreSQL's COLLATE "C" is compared byte for
 *   byte in both, so neither is written; SQLite's NOCASE is written "collate nocase";
 * - a CHECK is written "x in (a, b)" (PostgreSQL shows x = ANY (ARRAY[a, b]));
 * - triggers are written per table ("trigger on users"): what they do differs by design.
 * Constraint names the databases make up (sqlite_autoindex_users_1, users_pkey) are left out; index
 * names we chose are facts.
 */
import type Database from 'better-sqlite3';
import type pg from 'pg';

/** Splits a column list or a CREATE TABLE body at its top-level commas. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let current = '';
  for (const char of text) {
    if (char === "'") quoted = !quoted;
    if (!quoted && char === '(') depth++;
    if (!quoted && char === ')') depth--;
    if (!quoted && depth === 0 && char === ',') {
      parts.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  if (current.trim() !== '') parts.push(current.trim());
  return parts;
}

/** SQL text with comments gone, whitespace collapsed, parentheses dropped, lower case: for comparing predicates. */
function normalizeExpression(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/::[a-z ]+(\[\])?/gi, '')
    .replace(/[()]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/** The text without the parentheses that enclose all of it. */
function unwrap(text: string): string {
  for (;;) {
    if (!text.startsWith('(') || !text.endsWith(')')) return text;
    let depth = 0;
    for (let i = 0; i < text.length; i++) {
      if (text[i] === '(') depth++;
      if (text[i] === ')') depth--;
      if (depth === 0 && i < text.length - 1) return text;
    }
    text = text.slice(1, -1).trim();
  }
}

/** "x in ('a', 'b')" from either dialect's text of a CHECK. */
function normalizeCheck(sql: string): string {
  const text = unwrap(
    sql
      .replace(/::text/g, '')
      .replace(/^CHECK\s*/i, '')
      .replace(/\s+/g, ' ')
      .trim(),
  );
  const anyArray = /^(\w+) = ANY \(ARRAY\[(.*)\]\)$/.exec(text);
  if (anyArray) return `${anyArray[1]} in (${splitTopLevel(anyArray[2]!).join(', ')})`;
  const inList = /^(\w+) IN \((.*)\)$/i.exec(text);
  if (inList) return `${inList[1]} in (${splitTopLevel(inList[2]!).join(', ')})`;
  return normalizeExpression(text);
}

// ---------------------------------------------------------------- SQLite

interface SqliteColumn {
  cid: number;
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}

export function sqliteSchemaFacts(db: Database.Database): string[] {
  const facts: string[] = [];
  const tables = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as {
    name: string;
    sql: string;
  }[];
  for (const { name: table, sql } of tables) {
    facts.push(`table ${table}`);
    const body = sql.slice(sql.indexOf('(') + 1, sql.lastIndexOf(')'));
    const definitions = splitTopLevel(body.replace(/--[^\n]*/g, ''));
    const autoincrement = /\bAUTOINCREMENT\b/i.test(sql);
    const columns = db.prepare(`SELECT * FROM pragma_table_info(?) ORDER BY cid`).all(table) as SqliteColumn[];
    const booleans = new Set<string>();
    for (const column of columns) {
      const definition = definitions.find((d) => d.split(/\s+/)[0] === column.name) ?? '';
      for (const check of definition.matchAll(/CHECK\s*(\((?:[^()]|\([^()]*\))*\))/gi)) {
        const normalized = normalizeCheck(check[1]!);
        if (normalized === `${column.name} in (0, 1)`) booleans.add(column.name);
        else facts.push(`check ${table} ${normalized}`);
      }
      const collation = /COLLATE\s+(\w+)/i.exec(definition)?.[1]?.toLowerCase();
      const type = booleans.has(column.name) ? 'boolean' : column.type.toLowerCase();
      let fact = `column ${table}.${column.name} ${type}`;
      if (collation !== undefined && collation !== 'binary') fact += ` collate ${collation}`;
      if (column.notnull || column.pk) fact += ' not null';
      if (column.pk && autoincrement && column.type === 'INTEGER') fact += ' default autoincrement';
      else if (column.dflt_value !== null) {
        const value = booleans.has(column.name) ? ({ '0': 'false', '1': 'true' }[column.dflt_value] ?? column.dflt_value) : column.dflt_value;
        fact += ` default ${value}`;
      }
      facts.push(fact);
    }
    // Table constraints: CHECKs written after the columns.
    for (const definition of definitions.filter((d) => /^CHECK\b/i.test(d))) facts.push(`check ${table} ${normalizeCheck(definition)}`);
    const primaryKey = columns
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    if (primaryKey.length > 0) facts.push(`primary key ${table} (${primaryKey.join(', ')})`);

    const indexes = db.prepare('SELECT name, "unique", origin, partial FROM pragma_index_list(?)').all(table) as {
      name: string;
      unique: number;
      origin: string;
      partial: number;
    }[];
    for (const index of indexes) {
      if (index.origin === 'pk') continue;
      const keys = (
        db.prepare('SELECT name, coll, key FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno').all(index.name) as { name: string | null; coll: string }[]
      ).map((k) => {
        const column = k.name ?? '<expression>';
        return k.coll === 'BINARY' ? column : `${column} collate ${k.coll.toLowerCase()}`;
      });
      if (index.origin === 'u') {
        facts.push(`unique ${table} (${keys.join(', ')})`);
        continue;
      }
      const indexSql = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(index.name) as { sql: string }).sql;
      const where = index.partial ? ` where ${normalizeExpression(indexSql.slice(indexSql.search(/\bWHERE\b/i) + 5))}` : '';
      facts.push(`${index.unique ? 'unique index' : 'index'} ${index.name} on ${table} (${keys.join(', ')})${where}`);
    }

    const foreignKeys = db.prepare('SELECT id, seq, "table", "from", "to", on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(table) as {
      id: number;
      table: string;
      from: string;
      to: string;
      on_delete: string;
    }[];
    for (const id of new Set(foreignKeys.map((k) => k.id))) {
      const parts = foreignKeys.filter((k) => k.id === id);
      facts.push(
        `foreign key ${table} (${parts.map((p) => p.from).join(', ')}) references ${parts[0]!.table} (${parts.map((p) => p.to).join(', ')}) on delete ${parts[0]!.on_delete.toLowerCase()}`,
      );
    }
  }
  const triggerTables = db.prepare("SELECT DISTINCT tbl_name FROM sqlite_master WHERE type = 'trigger'").all() as { tbl_name: string }[];
  for (const { tbl_name } of triggerTables) facts.push(`trigger on ${tbl_name}`);
  return facts.sort();
}

// ---------------------------------------------------------------- PostgreSQL

const postgresTypes: Record<string, string> = {
  bigint: 'integer',
  integer: 'int32',
  text: 'text',
  boolean: 'boolean',
  'double precision': 'real',
};

/** What pg_get_indexdef says of one key, in the facts' words. */
function postgresIndexKey(key: string): string {
  // Byte order either way (see the header); lower(x) stays an expression.
  const withoutC = key.replace(/\s*COLLATE "C"/g, '');
  const lower = /^lower\(\(?(\w+)\)?\)$/.exec(withoutC);
  return lower ? `lower(${lower[1]})` : withoutC;
}

export async function postgresSchemaFacts(client: pg.Pool | pg.PoolClient | pg.Client, schema: string): Promise<string[]> {
  const facts: string[] = [];
  const q = async <T>(sql: string): Promise<T[]> => (await client.query(sql, [schema])).rows as T[];
  for (const { table_name } of await q<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
  )) {
    facts.push(`table ${table_name}`);
  }
  const columns = await q<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
    'SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = $1',
  );
  for (const c of columns) {
    let fact = `column ${c.table_name}.${c.column_name} ${postgresTypes[c.data_type] ?? c.data_type}`;
    if (c.is_nullable === 'NO') fact += ' not null';
    if (c.column_default !== null) {
      const value = /^nextval\(/.test(c.column_default) ? 'autoincrement' : c.column_default.replace(/::(text|bigint|integer)\b/g, '');
      fact += ` default ${value}`;
    }
    facts.push(fact);
  }
  const constraints = await q<{
    table: string;
    contype: string;
    def: string;
    columns: string[];
    ref_table: string | null;
    ref_columns: string[] | null;
    confdeltype: string;
  }>(
    `SELECT t.relname AS table, c.contype, pg_get_constraintdef(c.oid) AS def,
            ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i)::text[] AS columns,
            r.relname AS ref_table,
            ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i)::text[] AS ref_columns,
            c.confdeltype
       FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace LEFT JOIN pg_class r ON r.oid = c.confrelid
      WHERE n.nspname = $1`,
  );
  const onDelete: Record<string, string> = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };
  for (const c of constraints) {
    if (c.contype === 'p') facts.push(`primary key ${c.table} (${c.columns.join(', ')})`);
    else if (c.contype === 'u') facts.push(`unique ${c.table} (${c.columns.join(', ')})`);
    else if (c.contype === 'c') facts.push(`check ${c.table} ${normalizeCheck(c.def)}`);
    else if (c.contype === 'f')
      facts.push(
        `foreign key ${c.table} (${c.columns.join(', ')}) references ${c.ref_table} (${c.ref_columns!.join(', ')}) on delete ${onDelete[c.confdeltype]}`,
      );
  }
  const indexes = await q<{ table: string; name: string; unique: boolean; keys: string[]; predicate: string | null }>(
    `SELECT t.relname AS table, i.relname AS name, x.indisunique AS unique,
            ARRAY(SELECT pg_get_indexdef(x.indexrelid, k, true) FROM generate_series(1, x.indnkeyatts) k ORDER BY k)::text[] AS keys,
            pg_get_expr(x.indpred, x.indrelid) AS predicate
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
  );
  for (const index of indexes) {
    const where = index.predicate === null ? '' : ` where ${normalizeExpression(index.predicate)}`;
    facts.push(`${index.unique ? 'unique index' : 'index'} ${index.name} on ${index.table} (${index.keys.map(postgresIndexKey).join(', ')})${where}`);
  }
  for (const { table } of await q<{ table: string }>(
    'SELECT DISTINCT c.relname AS table FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT g.tgisinternal',
  )) {
    facts.push(`trigger on ${table}`);
  }
  return facts.sort();
}
