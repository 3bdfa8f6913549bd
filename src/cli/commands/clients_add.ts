import { epochSeconds, systemClock } from '../../clock.js';
import { newClientSecret, readJwksFile, validJwksUri } from '../../directory/clients.js';
import { validBackchannelLogoutUri, validClientId, validGrantTypes, validName, validRedirectUri, validWebOrigins } from '../../directory/validation.js';
import { DuplicateError } from '../../store/store.js';
import { CommandError, defineCommand } from '../command.js';
import { cliAudit } from '../audit_log.js';
import { managementClient } from '../management_client.js';

export const clientsAddCommand = defineCommand({
  usage:
    'latchkey clients add <client_id> [--name <name>] [--redirect-uri <uri>]... ' +
    '[--grant-type authorization_code|device_code|refresh_token|client_credentials]... [--confidential [--client-secret-jwt]] ' +
    '[--jwks-uri <url> | --jwks-file <file>] [--no-pkce] [--first-party] ' +
    '[--post-logout-redirect-uri <uri>]... [--backchannel-logout-uri <uri>] [--require-par] [--web-origin <origin>]...',
  help: [
    'Options:',
    '  --confidential           the client gets a secret (printed once): client_secret_basic, client_secret_post',
    '  --client-secret-jwt      with --confidential: client_secret_jwt too (the secret is then kept sealed, not only as a digest)',
    '  --jwks-uri <url>         the client authenticates with private_key_jwt (RFC 7523), signing with keys published here',
    '  --jwks-file <file>       the same with a JWK Set of public keys stored now (no secret is made)',
    '  --require-par            the client must push its authorization requests to /oauth/par first (RFC 9126)',
    '  --web-origin <origin>    repeatable; scheme://host[:port] (https, or http to a loopback host) whose browser code may',
    '                           call the token, userinfo, revocation and device endpoints for this client (CORS)',
    '  --grant-type <type>      repeatable; default authorization_code and refresh_token. client_credentials needs a',
    '                           confidential client and `clients grant` to say what it may ask for',
    '',
  ].join('\n'),
  positionals: { min: 1, max: 1 },
  options: {
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    'grant-type': { type: 'string', multiple: true },
    confidential: { type: 'boolean' },
    'no-pkce': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    'client-secret-jwt': { type: 'boolean' },
    'require-par': { type: 'boolean' },
    'web-origin': { type: 'string', multiple: true },
  },
  remote: true,
  async run(context) {
    const clientId = validClientId(context.positionals[0] ?? '');
    const checks = (context.values['redirect-uri'] ?? []).map(validRedirectUri);
    const redirectUris = [...new Set(checks.map((c) => c.uri))];
    const grantTypes = validGrantTypes(context.values['grant-type']);
    // Where RP-Initiated Logout may send the person: the same rules as redirect URIs, matched exactly.
    const logoutChecks = (context.values['post-logout-redirect-uri'] ?? []).map(validRedirectUri);
    const postLogoutRedirectUris = [...new Set(logoutChecks.map((c) => c.uri))];
    const backchannelLogoutUri = validBackchannelLogoutUri(context.values['backchannel-logout-uri']);
    const webOrigins = validWebOrigins(context.values['web-origin'] ?? []);
    for (const check of [...checks, ...logoutChecks]) if (check.warning) context.stderr.write(`warning: ${check.warning}\n`);
    if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
      context.stderr.write(`warning: ${clientId} may use authorization_code but has no --redirect-uri, so sign-ins through /authorize will be refused\n`);
    }
    const requirePar = context.values['require-par'] === true;
    if (requirePar && !grantTypes.includes('authorization_code')) {
      context.stderr.write(`warning: --require-par only concerns /authorize, which ${clientId} may not use (no authorization_code grant)\n`);
    }
    if (webOrigins.length > 0 && context.values.confidential === true) {
      context.stderr.write(`warning: code in a browser cannot keep a client secret; a client called from ${webOrigins.join(', ')} is usually public\n`);
    }
    const jwksUriOption = context.values['jwks-uri'];
    const jwksFile = context.values['jwks-file'];
    if (jwksUriOption !== undefined && jwksFile !== undefined) throw new CommandError('--jwks-uri and --jwks-file cannot be combined');
    const withKeys = jwksUriOption !== undefined || jwksFile !== undefined;
    if (withKeys && context.values.confidential === true) {
      throw new CommandError('a client authenticates with a secret (--confidential) or with its keys (--jwks-uri/--jwks-file), not both');
    }
    const jwksUri = jwksUriOption === undefined ? undefined : validJwksUri(jwksUriOption);
    const jwks = jwksFile === undefined ? undefined : await readJwksFile(jwksFile);
    if (grantTypes.includes('client_credentials') && context.values.confidential !== true && !withKeys) {
      throw new CommandError('client_credentials is for confidential clients: add --confidential, --jwks-uri or --jwks-file');
    }
    if (context.values['client-secret-jwt'] === true && context.values.confidential !== true)
      throw new CommandError('--client-secret-jwt needs --confidential');
    const summary = (secret: string | undefined) =>
      `Registered client ${clientId} (${withKeys ? 'confidential, private_key_jwt' : secret ? 'confidential' : 'public'}; grants: ${grantTypes.join(', ')}${requirePar ? '; pushed authorization requests required' : ''}${webOrigins.length > 0 ? `; web origins: ${webOrigins.join(' ')}` : ''})\n`;
    const remote = managementClient(context);
    if (remote) {
      // The same client through POST /api/v1/clients (field names of the configuration file); the server audits it.
      if (jwksFile !== undefined) throw new CommandError('--jwks-file does not work with --server yet: publish the keys and use --jwks-uri');
      if (context.values['client-secret-jwt'] === true) throw new CommandError('--client-secret-jwt does not work with --server yet');
      const created = await remote.call<{ client_secret?: string }>('POST', '/clients', {
        client_id: clientId,
        name: validName(context.values.name) ?? clientId,
        redirect_uris: redirectUris,
        grant_types: grantTypes,
        confidential: context.values.confidential === true || withKeys,
        first_party: context.values['first-party'] === true,
        pkce: context.values.confidential !== true && !withKeys && context.values['no-pkce'] !== true,
        require_par: requirePar,
        web_origins: webOrigins,
        post_logout_redirect_uris: postLogoutRedirectUris,
        ...(backchannelLogoutUri === undefined ? {} : { backchannel_logout_uri: backchannelLogoutUri }),
        ...(jwksUri === undefined ? {} : { jwks_uri: jwksUri }),
      });
      context.stderr.write(summary(created.client_secret));
      if (created.client_secret) context.stdout.write(`client_secret (shown only once): ${created.client_secret}\n`);
      return 0;
    }
    const fresh =
      context.values.confidential === true ? newClientSecret(await context.secretBox(), clientId, context.values['client-secret-jwt'] === true) : undefined;
    const secret = fresh?.secret;
    try {
      const store = await context.store();
      await store.createClient({
        clientId,
        name: validName(context.values.name) ?? clientId,
        secretHash: fresh?.hash,
        redirectUris,
        grantTypes,
        // The contract asks PKCE of public clients; confidential clients may still send it.
        requirePkce: secret === undefined && !withKeys && context.values['no-pkce'] !== true,
        firstParty: context.values['first-party'] === true,
        builtIn: false,
        createdAt: epochSeconds(systemClock),
        tokensRevokedAt: undefined,
        postLogoutRedirectUris,
        webOrigins,
        backchannelLogoutUri,
        jwksUri,
        jwks,
        secretSealed: fresh?.sealed,
        previousSecretHash: undefined,
        previousSecretSealed: undefined,
        previousSecretExpiresAt: undefined,
        disabled: false,
        registrationAccessTokenHash: undefined,
        tokenEndpointAuthMethod: undefined,
        requirePar,
      });
    } catch (err) {
      if (err instanceof DuplicateError) throw new CommandError(`client "${clientId}" already exists`);
      throw err;
    }
    const authentication = withKeys ? 'private_key_jwt' : secret ? 'client secret' : 'public';
    await cliAudit(context, 'client.created', {
      clientId,
      confidential: secret !== undefined || withKeys,
      authentication,
      grantTypes,
      ...(requirePar ? { requirePar } : {}),
      ...(webOrigins.length > 0 ? { webOrigins } : {}),
    });
    context.stderr.write(summary(secret));
    if (secret) context.stdout.write(`client_secret (shown only once): ${secret}\n`);
    return 0;
  },
});
