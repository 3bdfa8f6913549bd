/** Every grant type the token endpoint serves, by its wire `grant_type`. */
import { authorizationCodeGrant } from './authorization_code.js';
import { deviceCodeGrant } from './device_code.js';
import { refreshTokenGrant } from './refresh_token.js';
import { clientCredentialsGrant } from './client_credentials.js';
import type { GrantHandler } from './types.js';

const grants: GrantHandler[] = [authorizationCodeGrant, deviceCodeGrant, refreshTokenGrant, clientCredentialsGrant];

export const grantHandlers: ReadonlyMap<string, GrantHandler> = new Map(grants.map((g) => [g.grantType, g]));

export const supportedGrantTypes = grants.map((g) => g.grantType);
