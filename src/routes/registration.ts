/**
 * POST /oauth/register (RFC 7591) with an initial access token from `latchkey clients
 * registration-token`, spent by the registration that uses it; GET, PUT and DELETE at the
 * registration_client_uri (RFC 7592) with the client's registration access token, compared in
 * constant time. Bodies are JSON here, and only here: this plugin swaps the app's form parser for
 * its own, bounded at 64 KiB. Tokens are refused with 401 invalid_token and a Bearer challenge
 * (RFC 6750 §3); metadata with invalid_redirect_uri / invalid_client_metadata (RFC 7591 §3.2.2).
 */
import { managedMessage } from '../directory/managed.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { TextDecoder } from 'node:util';
import { epochSeconds } from '../clock.js';
import { newClientSecret, type NewClientSecret } from '../directory/clients.js';
import { constantTimeEqual, randomSecret, secretPrefix, sha256 } from '../crypto/secrets.js';
import { OAuthError } from '../errors.js';
import { audit } from '../audit/audit_events.js';
import {
  authMethodOf,
  clientInformation,
  metadataChanges,
  newRegisteredClientId,
  parseClientMetadata,
  registrationPath,
  secretKind,
  type ClientMetadata,
} from '../directory/client_registration.js';
import type { ClientRecord } from '../store/store.js';
import { postOnly } from '../http/method_not_allowed.js';

/** The same bound as the app's other bodies: client metadata is small. */
const maxBodyBytes = 64 * 1024;

type Operation = 'register' | 'read' | 'update' | 'delete';

function bearerChallenge(error?: string, description?: string): string {
  return ['Bearer realm="latchkey"', ...(error ? [`error="${error}"`] : []), ...(description ? [`error_description="${description}"`] : [])].join(', ');
}

/** RFC 6750 §3.1: a request without a token gets a bare challenge; a bad token, one naming the error. */
function invalidToken(presented: boolean, description: string, detail: string): OAuthError {
  return new OAuthError('invalid_token', description, {
    detail,
    headers: { 'www-authenticate': presented ? bearerChallenge('invalid_token', description) : bearerChallenge() },
  });
}

function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined || !/^bearer /i.test(authorization)) return undefined;
  const token = authorization.slice(7).trim();
  return token === '' ? undefined : token;
}

/** The body's bytes, at most maxBodyBytes; larger is refused without reading the rest. */
async function readBody(request: FastifyRequest, payload: AsyncIterable<Buffer | string>): Promise<Buffer> {
  const tooLarge = () => new OAuthError('invalid_client_metadata', 'The registration request is larger than 64 KiB.', { status: 413 });
  if (Number(request.headers['content-length']) > maxBodyBytes) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of payload) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    if (size > maxBodyBytes) throw tooLarge();
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}

/** RFC 7591 §3.1: the metadata is a JSON object sent as application/json (UTF-8, RFC 8259 §8.1). */
function jsonBody(request: FastifyRequest): unknown {
  const type = ((request.headers['content-type'] ?? '').split(';')[0] ?? '').trim().toLowerCase();
  if (type !== 'application/json')
    throw new OAuthError('invalid_client_metadata', 'The client metadata must be sent as application/json.', { detail: `content type ${type.slice(0, 80)}` });
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new OAuthError('invalid_client_metadata', 'The client metadata is not valid UTF-8.');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new OAuthError('invalid_client_metadata', 'The client metadata is not valid JSON.');
  }
}

export async function registrationRoutes(app: FastifyInstance): Promise<void> {
  const { store, clock, config } = app.services;
  const issuer = config.issuer;

  // JSON only here: the form parser the app registered does not apply inside this plugin. The raw
  // bytes are decoded and parsed by the handler, so that every failure is an RFC 7591 error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', async (request: FastifyRequest, payload: AsyncIterable<Buffer | string>) => readBody(request, payload));

  /** Runs one operation: refusals are audited (never with the token or the metadata) and rethrown. */
  async function guarded<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: Operation,
    clientId: string | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    try {
      return await work();
    } catch (err) {
      if (err instanceof OAuthError) {
        audit(request, 'client.registration_refused', { operation, error: err.code, ...(clientId === undefined ? {} : { clientId: clientId.slice(0, 128) }) });
      }
      throw err;
    }
  }

  /** The client this registration access token manages, or 401: unknown, operator-made, disabled or another client's token alike. */
  async function managedClient(request: FastifyRequest, clientId: string): Promise<{ client: ClientRecord; token: string }> {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) throw invalidToken(false, 'A registration access token is required.', 'no bearer token');
    const client = await store.findClient(clientId);
    const expected = client?.registrationAccessTokenHash;
    // Compared whatever was found, so the time taken does not tell whether the client exists.
    const matches = constantTimeEqual(sha256(token), expected ?? sha256(''));
    if (client === undefined || expected === undefined || !matches || client.disabled) {
      throw invalidToken(
        true,
        'The registration access token is invalid.',
        client === undefined ? 'unknown client' : client.disabled ? 'disabled client' : 'wrong registration access token',
      );
    }
    return { client, token };
  }

  /**
   * RFC 7592 §2.2: a client the server does not let change itself is answered 403. One declared in
   * a configuration file changes only there (the next apply would undo it); the file's path is the
   * operator's business, logged, not told to the client.
   */
  function refuseManagedChange(client: ClientRecord): void {
    if (client.managedBy === undefined) return;
    throw new OAuthError('access_denied', 'This client is managed by the server configuration and cannot be changed through registration.', {
      status: 403,
      detail: managedMessage('client', client.clientId, client.managedBy),
    });
  }

  /** A new secret when the method needs one the client does not have in the right form. */
  function secretFor(m: ClientMetadata, clientId: string, current: ClientRecord | undefined): NewClientSecret | 'keep' | undefined {
    const kind = secretKind(m.method);
    if (kind === undefined) return undefined;
    const currentKind = current === undefined ? undefined : secretKind(authMethodOf(current));
    const keep = current?.secretHash !== undefined && currentKind !== undefined && (kind === 'digest' || current.secretSealed !== undefined);
    return keep ? 'keep' : newClientSecret(app.services.secretBox, clientId, kind === 'sealed');
  }

  postOnly(app, registrationPath);
  app.post(registrationPath, async (request, reply) =>
    guarded(request, reply, 'register', undefined, async () => {
      const now = epochSeconds(clock);
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) throw invalidToken(false, 'An initial access token is required.', 'no bearer token');
      const tokenHash = sha256(token);
      const initial = await store.findRegistrationToken(tokenHash);
      if (initial === undefined || initial.usedAt !== undefined || initial.expiresAt <= now) {
        throw invalidToken(
          true,
          'The initial access token is invalid, expired or already used.',
          initial === undefined ? 'unknown initial access token' : initial.usedAt !== undefined ? 'used initial access token' : 'expired initial access token',
        );
      }
      const metadata = parseClientMetadata(jsonBody(request), { outboundAllow: config.outboundAllow });
      const clientId = newRegisteredClientId();
      const secret = secretFor(metadata, clientId, undefined);
      const fresh = secret === 'keep' ? undefined : secret;
      const registrationAccessToken = randomSecret(secretPrefix.registrationAccessToken);
      const client: ClientRecord = {
        clientId,
        ...metadataChanges(clientId, metadata),
        secretHash: fresh?.hash,
        secretSealed: fresh?.sealed,
        // Never first party: a registered client always asks the person for consent.
        firstParty: false,
        builtIn: false,
        createdAt: now,
        tokensRevokedAt: undefined,
        previousSecretHash: undefined,
        previousSecretSealed: undefined,
        previousSecretExpiresAt: undefined,
        disabled: false,
        registrationAccessTokenHash: sha256(registrationAccessToken),
        managedBy: undefined,
        tokenEndpointAuthMethod: metadata.method,
        requirePar: false,
      };
      // The token is spent in the same step that stores the client: of two racing registrations, one wins.
      if (!(await store.registerClient(client, tokenHash, now)))
        throw invalidToken(true, 'The initial access token is invalid, expired or already used.', 'initial access token spent meanwhile');
      audit(request, 'client.registered', { clientId, authentication: metadata.method, grantTypes: metadata.grantTypes });
      const stored = (await store.findClient(clientId)) ?? client;
      return reply.code(201).send(clientInformation(stored, issuer, { registrationAccessToken, clientSecret: fresh?.secret }));
    }),
  );

  const managementPath = `${registrationPath}/:clientId`;
  app.route({
    method: ['POST', 'PATCH'],
    url: managementPath,
    handler: async (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'GET, PUT, DELETE')
        .header('cache-control', 'no-store')
        .send({ error: 'invalid_request', error_description: 'Use GET, PUT or DELETE here.' }),
  });

  app.get<{ Params: { clientId: string } }>(managementPath, async (request, reply) =>
    guarded(request, reply, 'read', request.params.clientId, async () => {
      const { client, token } = await managedClient(request, request.params.clientId);
      audit(request, 'client.registration_read', { clientId: client.clientId });
      return clientInformation(client, issuer, { registrationAccessToken: token });
    }),
  );

  app.put<{ Params: { clientId: string } }>(managementPath, async (request, reply) =>
    guarded(request, reply, 'update', request.params.clientId, async () => {
      const { client, token } = await managedClient(request, request.params.clientId);
      refuseManagedChange(client);
      const metadata = parseClientMetadata(jsonBody(request), { outboundAllow: config.outboundAllow });
      // RFC 7592 §2.2: the update names the client, and a secret it repeats must be the current one.
      if (metadata.clientId !== client.clientId) throw new OAuthError('invalid_client_metadata', 'client_id must be the client_id of this registration.');
      if (metadata.clientSecret !== undefined && (client.secretHash === undefined || !constantTimeEqual(sha256(metadata.clientSecret), client.secretHash))) {
        throw new OAuthError('invalid_client_metadata', 'client_secret is not the current client secret; a client cannot choose its secret.');
      }
      const secret = secretFor(metadata, client.clientId, client);
      const updated = await store.updateRegisteredClient(client.clientId, {
        changes: metadataChanges(client.clientId, metadata),
        tokenEndpointAuthMethod: metadata.method,
        secret: secret === 'keep' ? 'keep' : secret === undefined ? undefined : { hash: secret.hash, sealed: secret.sealed },
      });
      const stored = updated ? await store.findClient(client.clientId) : undefined;
      if (stored === undefined) throw invalidToken(true, 'The registration access token is invalid.', 'client removed during the update');
      const fresh = secret === 'keep' ? undefined : secret;
      audit(request, 'client.registration_updated', {
        clientId: client.clientId,
        authentication: metadata.method,
        grantTypes: metadata.grantTypes,
        newSecret: fresh !== undefined,
      });
      return clientInformation(stored, issuer, { registrationAccessToken: token, clientSecret: fresh?.secret });
    }),
  );

  app.delete<{ Params: { clientId: string } }>(managementPath, async (request, reply) =>
    guarded(request, reply, 'delete', request.params.clientId, async () => {
      const { client } = await managedClient(request, request.params.clientId);
      refuseManagedChange(client);
      // As `clients remove`: everything issued to it goes, and a later client of this id inherits nothing.
      if (!(await store.removeClient(client.clientId, epochSeconds(clock))))
        throw invalidToken(true, 'The registration access token is invalid.', 'client removed meanwhile');
      audit(request, 'client.registration_deleted', { clientId: client.clientId });
      return reply.code(204).send();
    }),
  );
}
