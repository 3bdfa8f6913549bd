/**
 * A person an operator adds by hand (`users add`, the console's Users page, `POST /api/v1/users`):
 * a local account whose address the operator entered, so it counts as verified, with no upstream
 * groups and no roles until they are granted.
 */
import type { UserRecord } from '../store/store.js';

export interface OperatorEnteredUser {
  id: string;
  username: string;
  email: string;
  name: string | undefined;
  passwordHash: string;
  profile: UserRecord['profile'];
  now: number;
}

export function operatorEnteredUser(user: OperatorEnteredUser): UserRecord {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    name: user.name,
    passwordHash: user.passwordHash,
    disabled: false,
    createdAt: user.now,
    tokensRevokedAt: undefined,
    source: 'local',
    emailVerified: true,
    groups: [],
    roles: [],
    profile: user.profile,
    updatedAt: user.now,
  };
}
