/** TOTP secrets are sealed with the server's secret key, bound to their user (as connector secrets are to their connector). */
export const totpSecretContext = (userId: string) => `totp:${userId}`;
