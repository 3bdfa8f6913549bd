/**
 * The peer the bench measures Latchkey against: panva's oidc-provider (the reference JavaScript
 * OpenID Provider, certified), run the way Latchkey runs in the bench — its own process, pinned to
 * the server core — with the device flow on, JWT access tokens signed with the run's algorithm,
 * the same endpoint paths as Latchkey (so the same requests drive both), and an in-memory adapter
 * that never evicts (oidc-provider's development adapter is an LRU of 1,000 entries, which would
 * drop seeded codes and make the peer look slower or broken).
 *
 * Usage: node dist-bench/bench/peer_oidc_provider.js <spec.json>; the spec names the port, the algorithm,
 * how many pending and approved device codes to seed and where to write them (JSON) before listening.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';
import { deviceClientId, deviceScope } from './seed.js';

export interface PeerSpec {
  port: number;
  alg: 'RS256' | 'ES256' | 'EdDSA';
  counts: { pendingWarm: number; pending: number; approvedWarm: number; approved: number };
  /** Where the seeded device codes are written, as JSON with the same four lists. */
  out: string;
}

/** The audience the peer's access tokens are for (a resource indicator, so they are JWTs). */
const resource = 'https://api.bench.example';
/** What an approved device code grants: the device scope but openid (see seed()). */
const issuedScope = deviceScope
  .split(' ')
  .filter((s) => s !== 'openid')
  .join(' ');

/** Everything in Maps: nothing expires early, nothing is evicted. */
class MapAdapter implements Adapter {
  private static readonly models = new Map<string, MapAdapter>();
  private readonly entries = new Map<string, AdapterPayload>();
  private readonly byUserCode = new Map<string, string>();
  private readonly byUid = new Map<string, string>();
  private readonly byGrant = new Map<string, Set<string>>();

  constructor(readonly name: string) {
    const existing = MapAdapter.models.get(name);
    if (existing) return existing;
    MapAdapter.models.set(name, this);
  }

  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.entries.set(id, payload);
    if (payload.userCode) this.byUserCode.set(payload.userCode, id);
    if (payload.uid) this.byUid.set(payload.uid, id);
    if (payload.grantId) {
      let members = this.byGrant.get(payload.grantId);
      if (!members) this.byGrant.set(payload.grantId, (members = new Set()));
      members.add(id);
    }
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.entries.get(id);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    const id = this.byUserCode.get(userCode);
    return id === undefined ? undefined : this.entries.get(id);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const id = this.byUid.get(uid);
    return id === undefined ? undefined : this.entries.get(id);
  }

  async consume(id: string): Promise<void> {
    const entry = this.entries.get(id);
    if (entry) entry.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.entries.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const id of this.byGrant.get(grantId) ?? []) this.entries.delete(id);
    this.byGrant.delete(grantId);
  }
}

function signingKey(alg: PeerSpec['alg']) {
  const { privateKey } =
    alg === 'RS256'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : alg === 'ES256'
        ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
        : generateKeyPairSync('ed25519');
  return { ...privateKey.export({ format: 'jwk' }), kid: `peer-${alg}`, alg, use: 'sig' };
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as PeerSpec;
  const issuer = `http://127.0.0.1:${spec.port}`;
  // id_tokens need an RS256 key; access tokens are signed with the run's algorithm.
  const keys = spec.alg === 'RS256' ? [signingKey('RS256')] : [signingKey(spec.alg), signingKey('RS256')];
  const provider = new Provider(issuer, {
    adapter: MapAdapter,
    clients: [
      {
        client_id: deviceClientId,
        token_endpoint_auth_method: 'none',
        grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
        response_types: [],
        redirect_uris: [],
      },
    ],
    jwks: { keys },
    scopes: ['openid', 'email', 'profile', 'offline_access'],
    routes: { device_authorization: '/oauth/device/code', token: '/oauth/token', jwks: '/.well-known/jwks.json', userinfo: '/userinfo' },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: {
      deviceFlow: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({ scope: issuedScope, accessTokenFormat: 'jwt', accessTokenTTL: 86400, jwt: { sign: { alg: spec.alg } } }),
      },
    },
    cookies: { keys: ['bench-peer-cookie-key'] },
  });
  // No logging and no events for every request, as Latchkey's bench server logs nothing per request above info.
  const client = await provider.Client.find(deviceClientId);
  if (!client) throw new Error('the peer has no bench client');

  const seed = async (count: number, approved: boolean): Promise<string[]> => {
    const codes: string[] = [];
    for (let i = 0; i < count; i++) {
      // A pending code has no grant yet (the types ask for one that an approval would add).
      const code = new provider.DeviceCode({
        client,
        params: { client_id: deviceClientId, scope: deviceScope },
        userCode: `BENCH${i}`,
        deviceInfo: {},
      } as never);
      if (approved) {
        // What an approval records. Without `openid` granted the answer has no id_token: Latchkey
        // issues none in the device flow either, so both sign one access token per issuance.
        const grant = new provider.Grant({ clientId: deviceClientId, accountId: `person-${i % 100}` });
        grant.addOIDCScope(issuedScope);
        grant.addResourceScope(resource, issuedScope);
        code.grantId = await grant.save();
        code.accountId = `person-${i % 100}`;
        code.authTime = Math.floor(Date.now() / 1000);
        code.scope = issuedScope;
        code.resource = resource;
      }
      codes.push(await code.save());
    }
    return codes;
  };
  const seeded = {
    pendingWarm: await seed(spec.counts.pendingWarm, false),
    pending: await seed(spec.counts.pending, false),
    approvedWarm: await seed(spec.counts.approvedWarm, true),
    approved: await seed(spec.counts.approved, true),
  };
  writeFileSync(spec.out, JSON.stringify(seeded));
  const handle = provider.callback();
  const server = createServer((request, response) => void handle(request, response));
  server.keepAliveTimeout = 72_000;
  server.listen(spec.port, '127.0.0.1');
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

await main();
