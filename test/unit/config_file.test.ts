/**
 * The configuration file without a database: its schema (defaults as `clients add`, secrets only
 * as references), reading it with every problem at once, the plan against a database's objects
 * (pure), and the export's determinism.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { checkReferences, parseConfigurationText } from '../../src/config_file/load.js';
import { planConfiguration, planText, type DatabaseSnapshot, type PlanContext, type PlannedChange } from '../../src/config_file/plan.js';
import { exportText } from '../../src/config_file/export.js';
import { configurationJsonSchema, type ConfigurationFile } from '../../src/config_file/schema.js';
import type { ApiRecord, ClientRecord, ConnectorRecord, RoleRecord } from '../../src/store/store.js';

const path = '/etc/latchkey/latchkey.yaml';

function parsed(text: string, name = 'latchkey.yaml'): ConfigurationFile {
  const result = parseConfigurationText(text, name);
  if (!result.ok) throw new Error(result.problems.join('\n'));
  return result.file;
}

function problems(text: string, name = 'latchkey.yaml'): string[] {
  const result = parseConfigurationText(text, name);
  return result.ok ? checkReferences(result.file, { apis: [], clients: [] }) : result.problems;
}

const empty: DatabaseSnapshot = { apis: [], roles: [], clients: [], grants: [], connectors: [] };

function context(overrides: Partial<PlanContext> = {}): PlanContext {
  return {
    path,
    prune: false,
    now: 1_800_000_000,
    secrets: new Map([['client billing', 'the-billing-secret']]),
    sealConnectorSecret: (id, value) => `sealed(${id}:${value})`,
    openConnectorSecret: (_id, sealed) => /^sealed\((.*?):(.*)\)$/.exec(sealed)?.[2],
    ...overrides,
  };
}

/** What the database holds once the plan's changes are applied (a model of the store for the pure tests). */
function applied(database: DatabaseSnapshot, plan: readonly PlannedChange[]): DatabaseSnapshot {
  let { apis, roles, clients, grants, connectors } = database;
  for (const { change } of plan) {
    switch (change.object) {
      case 'api':
        apis = apis.filter((a) => a.identifier !== (change.kind === 'delete' ? change.id : change.record.identifier));
        if (change.kind !== 'delete') apis = [...apis, { ...change.record }];
        break;
      case 'role': {
        const name = change.kind === 'delete' ? change.id : change.record.name;
        const before = roles.find((r) => r.name === name);
        roles = roles.filter((r) => r.name !== name);
        if (change.kind !== 'delete')
          roles = [...roles, { createdAt: before?.createdAt ?? 0, ...change.record, builtIn: before?.builtIn ?? false, members: 0 }];
        break;
      }
      case 'client': {
        const id = change.kind === 'delete' ? change.id : change.record.clientId;
        clients = clients.filter((c) => c.clientId !== id);
        grants = grants.filter((g) => g.clientId !== id);
        if (change.kind !== 'delete') {
          clients = [...clients, change.record];
          grants = [...grants, ...change.grants];
        }
        break;
      }
      case 'connector': {
        const id = change.kind === 'delete' ? change.id : change.record.id;
        const before = connectors.find((c) => c.id === id);
        connectors = connectors.filter((c) => c.id !== id);
        if (change.kind !== 'delete')
          connectors = [...connectors, { createdAt: before?.createdAt ?? 0, ...change.record, position: before?.position ?? connectors.length + 1 }];
        break;
      }
    }
  }
  return { apis, roles, clients, grants, connectors };
}

const teamFile = `
apis:
  - identifier: https://api.example.com
    name: Reports
    scopes: [read:reports, write:reports]
roles:
  - name: analyst
    permissions: ["https://api.example.com:read:reports"]
    groups: [data, analytics]
clients:
  - client_id: web
    redirect_uris: [https://app.example.com/callback]
  - client_id: billing
    grant_types: [client_credentials]
    confidential: true
    client_secret: { env: BILLING_SECRET }
    grants:
      - api: https://api.example.com
        scopes: [read:reports]
`;

describe('the configuration file schema', () => {
  it('gives a client the defaults clients add gives: authorization_code and refresh_token, PKCE for a public client, not first party', () => {
    const file = parsed('clients:\n  - client_id: web\n');
    expect(file.clients[0]).toMatchObject({
      client_id: 'web',
      grant_types: ['authorization_code', 'refresh_token'],
      confidential: false,
      first_party: false,
      require_par: false,
      redirect_uris: [],
      grants: [],
    });
    const [step] = planConfiguration(file, empty, context());
    expect(step?.change).toMatchObject({
      kind: 'create',
      object: 'client',
      record: { clientId: 'web', name: 'web', requirePkce: true, secretHash: undefined },
    });
  });

  it('refuses a literal secret, saying to use a reference', () => {
    expect(problems('clients:\n  - client_id: m\n    confidential: true\n    client_secret: s3cr3t-value\n')).toEqual([
      'clients[0].client_secret: a secret is never written in the file: use a reference, { env: NAME } or { file: PATH }',
    ]);
    expect(
      problems(
        'connectors:\n  - id: corp\n    type: ldap\n    url: ldaps://ldap.example.com\n    bind_dn: cn=svc\n    bind_password: hunter22\n    user_base: ou=people\n',
      ),
    ).toEqual(['connectors[0].bind_password: a secret is never written in the file: use a reference, { env: NAME } or { file: PATH }']);
  });

  it('reads YAML and JSON, by the extension or else by the content', () => {
    const json = '{"apis": [{"identifier": "https://api.example.com", "scopes": ["read"]}]}';
    expect(parsed(json, 'latchkey.json').apis[0]?.identifier).toBe('https://api.example.com');
    expect(parsed(json, 'latchkey.conf').apis[0]?.identifier).toBe('https://api.example.com');
    expect(parsed('apis:\n  - identifier: https://api.example.com\n', 'latchkey.conf').apis[0]?.identifier).toBe('https://api.example.com');
    expect(problems('{"apis": [}', 'latchkey.json')[0]).toMatch(/^not valid JSON: /);
    expect(problems('apis:\n  - identifier: a\n    identifier: b\n')[0]).toMatch(/^line 3: /);
  });

  it('a file with ten mistakes gets ten messages, each naming its place in the file', () => {
    const text = `
apis:
  - identifier: "has spaces"
    scopes: [openid]
roles:
  - name: "-bad"
clients:
  - client_id: web
    redirect_uris: [not-a-url]
    grant_types: [implicit]
    web_origins: ["https://app.example.com/path"]
  - client_id: machine
    grant_types: [client_credentials]
  - client_id: web2
    colour: blue
connectors:
  - id: Corp
    type: oidc
    issuer: https://idp.example.com
    client_id: latchkey
  - id: other
    type: saml
`;
    const messages = problems(text);
    expect(messages).toEqual([
      'apis[0].identifier: an API identifier must be 1-2048 characters with no spaces (usually a URL such as https://api.example.com)',
      'apis[0].scopes: "openid" is an OpenID Connect scope of the server itself, not an API permission',
      'roles[0].name: "-bad" is not a valid role name: use 1-64 letters, digits or _ . : - (starting with a letter or digit)',
      'clients[0].redirect_uris[0]: "not-a-url" is not an absolute URI',
      'clients[0].grant_types: unknown grant type "implicit": use authorization_code, device_code, refresh_token or client_credentials',
      'clients[0].web_origins: web origin "https://app.example.com/path" has a path, query or fragment: an origin is scheme://host[:port] only, e.g. https://app.example.com',
      'clients[1].grant_types: client_credentials is for confidential clients: add confidential: true',
      'clients[2].colour: unknown field',
      'connectors[0].id: must be 1-63 lower-case letters, digits, - or _, starting with a letter or digit',
      'connectors[1].type: type must be oidc, github or ldap',
    ]);
  });

  it('checks what the schema alone cannot: duplicates, permissions and grants naming an unknown API or scope', () => {
    const text = `
apis:
  - identifier: https://api.example.com
    scopes: [read]
roles:
  - name: r
    permissions: ["https://api.example.com:write", "https://other.example.com:read"]
clients:
  - client_id: m
    confidential: true
    client_secret: { env: M }
    grant_types: [client_credentials]
    grants: [{ api: https://nowhere.example.com, scopes: [read] }, { api: https://api.example.com, scopes: [read, delete] }]
  - client_id: m
`;
    expect(problems(text)).toEqual([
      'clients[1].client_id: client "m" is declared twice (also clients[0].client_id)',
      'roles[0].permissions[0]: API https://api.example.com declares no scope "write" (it declares: read)',
      'roles[0].permissions[1]: permission "https://other.example.com:read" does not start with the identifier of an API of the file or the database followed by ":"',
      'clients[0].grants[0].api: no API "https://nowhere.example.com" in the file or the database',
      'clients[0].grants[1].scopes[1]: API https://api.example.com declares no scope "delete"',
    ]);
  });

  it('has a JSON Schema generated from the same zod schema', () => {
    const schema = configurationJsonSchema() as { properties: Record<string, unknown>; additionalProperties: unknown };
    expect(Object.keys(schema.properties)).toEqual(['server', 'apis', 'roles', 'clients', 'connectors']);
    expect(schema.additionalProperties).toBe(false);
    expect(JSON.stringify(schema)).toContain('"client_secret"');
  });
});

describe('the plan', () => {
  it('creates what the file declares on an empty database, APIs before the roles and grants that name them', () => {
    const plan = planConfiguration(parsed(teamFile), empty, context());
    expect(plan.map((p) => `${p.action} ${p.object} ${p.id}`)).toEqual([
      'create api https://api.example.com',
      'create role analyst',
      'create client web',
      'create client billing',
    ]);
    expect(plan.every((p) => 'record' in p.change && p.change.record.managedBy === path)).toBe(true);
    const role = plan[1]?.change;
    expect(role).toMatchObject({ record: { permissions: [{ api: 'https://api.example.com', scope: 'read:reports' }], groups: ['analytics', 'data'] } });
  });

  it('plans nothing the second time', () => {
    const file = parsed(teamFile);
    const database = applied(empty, planConfiguration(file, empty, context()));
    expect(planConfiguration(file, database, context())).toEqual([]);
    expect(planText([])).toBe('No changes: the database already holds what the file declares.\n');
  });

  it('changes only the fields that differ, old → new, and a secret only as the reference it is read from', () => {
    const database = applied(empty, planConfiguration(parsed(teamFile), empty, context()));
    const changed = parsed(teamFile.replace('[https://app.example.com/callback]', '[https://app.example.com/cb]'));
    const plan = planConfiguration(changed, database, context({ secrets: new Map([['client billing', 'a-new-secret']]) }));
    const text = planText(plan);
    expect(text).toBe(
      [
        '~ update client web',
        '    redirect_uris: ["https://app.example.com/callback"] → ["https://app.example.com/cb"]',
        '~ update client billing',
        '    client_secret: (set) → { env: BILLING_SECRET }',
        'Plan: 0 to create, 2 to update, 0 to delete.',
        '',
      ].join('\n'),
    );
    expect(text).not.toContain('a-new-secret');
    expect(text).not.toContain('the-billing-secret');
  });

  it('names where each secret of a new object is read from, never its value; a path that could be misread is quoted', () => {
    const file = parsed(
      `${teamFile}connectors:\n  - id: corp\n    type: ldap\n    url: ldap://ldap.example.com\n    bind_dn: cn=latchkey\n    user_base: ou=people\n    bind_password: { file: "/run/secrets/ldap password\\n+ create client evil" }\n`,
    );
    const secrets = new Map([
      ['client billing', 'the-billing-secret'],
      ['connector corp', 'the-bind-password'],
    ]);
    const text = planText(planConfiguration(file, empty, context({ secrets })));
    expect(text).toContain('+ create client billing\n    client_secret: { env: BILLING_SECRET }\n');
    expect(text).toContain('+ create connector corp\n    bind_password: { file: "/run/secrets/ldap password\\n+ create client evil" }\n');
    expect(text.split('\n').filter((line) => line.startsWith('+ '))).toHaveLength(5);
    expect(text).not.toMatch(/the-billing-secret|the-bind-password/);
  });

  it("prunes only what this file manages and no longer declares: never an unmanaged, another file's or a built-in object", () => {
    const database = applied(empty, planConfiguration(parsed(teamFile), empty, context()));
    const unmanaged: ClientRecord = { ...database.clients[0]!, clientId: 'by-hand', managedBy: undefined };
    const otherFile: ClientRecord = { ...database.clients[0]!, clientId: 'other-file', managedBy: '/srv/other.yaml' };
    const builtIn: RoleRecord = {
      name: 'admin',
      description: undefined,
      permissions: [],
      builtIn: true,
      createdAt: 0,
      members: 1,
      groups: [],
      managedBy: path,
    };
    const full = { ...database, clients: [...database.clients, unmanaged, otherFile], roles: [...database.roles, builtIn] };
    const smaller = parsed(teamFile.split('clients:')[0]!.replace(/roles:[\s\S]*/, ''));
    expect(planConfiguration(smaller, full, context()).map((p) => p.action)).toEqual([]);
    const pruned = planConfiguration(smaller, full, context({ prune: true }));
    expect(pruned.map((p) => `${p.action} ${p.object} ${p.id}`)).toEqual(['delete client web', 'delete client billing', 'delete role analyst']);
  });
});

describe('the built-in API', () => {
  const builtIn = 'https://id.example.com/api/v1';
  const declaring = `
apis:
  - identifier: ${builtIn}
    scopes: [read:users]
`;

  it('cannot be declared: the file is refused naming the field, whichever scopes it gives', () => {
    const file = parsed(declaring);
    expect(checkReferences(file, { apis: [], clients: [], builtInApis: [builtIn] })).toEqual([
      `apis[0].identifier: "${builtIn}" is built in (the management API): it cannot be declared; the server makes it at every start (add scopes of your own with latchkey apis update)`,
    ]);
    // Another server's management API is an API like any other.
    expect(checkReferences(file, { apis: [], clients: [], builtInApis: ['https://other.example.com/api/v1'] })).toEqual([]);
  });

  it('is never pruned, even when a file once managed it', () => {
    const managedBuiltIn = {
      identifier: builtIn,
      name: 'Latchkey management API',
      scopes: ['read:users'],
      introspectionClients: [],
      createdAt: 0,
      managedBy: path,
    };
    const database = { ...empty, apis: [managedBuiltIn] };
    expect(planConfiguration(parsed('apis: []'), database, context({ prune: true, builtInApis: [builtIn] }))).toEqual([]);
  });
});

describe('the export', () => {
  const api: ApiRecord = {
    identifier: 'https://api.example.com',
    name: 'Reports',
    scopes: ['read'],
    introspectionClients: [],
    createdAt: 1,
    managedBy: undefined,
  };
  const connector: ConnectorRecord = {
    id: 'corp',
    type: 'oidc',
    name: 'Corp',
    config: { issuer: 'https://idp.example.com', clientId: 'latchkey', scope: 'openid email profile', trustEmail: false },
    secret: 'sealed-value',
    position: 1,
    createdAt: 1,
    managedBy: undefined,
  };

  it('is the same text whatever order the database answers in, with secrets as references only', () => {
    const file = parsed(teamFile);
    const database = applied(empty, planConfiguration(file, empty, context()));
    const withConnector = { ...database, apis: [...database.apis, { ...api, identifier: 'https://a.example.com' }], connectors: [connector] };
    const reversed = {
      ...withConnector,
      apis: [...withConnector.apis].reverse(),
      clients: [...withConnector.clients].reverse(),
      roles: [...withConnector.roles].reverse(),
    };
    const text = exportText(withConnector, 'yaml');
    expect(exportText(reversed, 'yaml')).toBe(text);
    expect(text).toContain('client_secret:\n      env: CLIENT_BILLING_SECRET');
    expect(text).toContain('env: CONNECTOR_CORP_CLIENT_SECRET');
    expect(text).not.toContain('sealed-value');
    expect(text).not.toContain(database.clients.find((c) => c.clientId === 'billing')!.secretHash!);
    // What it prints, apply reads back as the same declarations.
    const back = parsed(text);
    expect(back.clients.map((c) => c.client_id)).toEqual(['billing', 'web']);
    // JSON holds the same as YAML.
    expect(JSON.parse(exportText(withConnector, 'json'))).toEqual(parseYaml(text));
  });
});
