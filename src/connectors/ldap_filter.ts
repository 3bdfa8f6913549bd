/**
 * Putting a typed username into an LDAP filter (RFC 4515 §3): the characters that mean something
 * in a filter — `*` `(` `)` `\` and NUL — are written as `\XX` escapes, so `*)(uid=*` is a literal
 * (and wrong) username, never a filter matching everyone.
 */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\u0000]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The configured filter with `{username}` (every occurrence) replaced by the escaped value. */
export function userFilter(template: string, username: string): string {
  return template.split('{username}').join(escapeFilterValue(username));
}
