/**
 * The target parameters of a token request (RFC 8707 §2.2): `resource`, or `audience` as clients
 * such as oidc-agent send it. For a grant a person approved (a code, a refresh family, a device
 * grant) they may only name what was approved; the access token is then for that one audience,
 * and a refresh token keeps the whole grant (narrowing affects the access token only).
 */
import { z } from 'zod';
import { maxTargetLength, narrowedAudience, requestedTarget, type TargetParameters } from '../oauth/audience.js';
import type { Services } from '../services.js';

/** The target fields, for a grant's own schema. */
export const targetFields = {
  audience: z.string().max(maxTargetLength, 'audience is too long.').optional(),
  resource: z.string().max(maxTargetLength, 'resource is too long.').optional(),
};

/**
 * The audience of the access token issued from a grant that holds `granted`, or invalid_target.
 * A grant holds one audience, so this is always that one: a refresh token issued beside the
 * access token keeps the same, whole grant.
 */
export async function accessTokenAudience(services: Services, granted: string, parameters: TargetParameters): Promise<string> {
  return await narrowedAudience(services.store, services.config, granted, requestedTarget(parameters));
}
