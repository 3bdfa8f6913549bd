/**
 * A typed username in the one form every check compares it in: the sign-in throttle's keys, the
 * rule that a local account owns its name, and the lookups (our users, then each directory). An
 * LDAP directory matches names after string preparation (RFC 4518 §2, for caseIgnoreMatch): it
 * finds `lara` for `ｌａｒａ`, `LARA ` or ` lara`. Anything keyed on the name as typed could be
 * escaped by spelling it another way the directory takes as the same, so the name is prepared the
 * way the directory prepares it before anything looks at it.
 */

/** RFC 4518 §2.2: tabs, line ends, NEL and every separator (Zs, Zl, Zp) are mapped to SPACE. */
const mappedToSpace = /[\t\n\v\f\r\u0085\p{Z}]/gu;

/**
 * RFC 4518 §2.2: the other control (Cc) and format (Cf: soft hyphen, zero-width spaces and joiners,
 * bidirectional marks…) characters, combining grapheme joiner, variation selectors, Mongolian todo
 * soft hyphen and object replacement character are mapped to nothing.
 */
// Each combining mark listed stands alone here: every one of them is removed, none combines.
// eslint-disable-next-line no-misleading-character-class
const mappedToNothing = /[\p{Cc}\p{Cf}\u034f\u1806\u180b-\u180d\ufe00-\ufe0f\ufffc\u{e0100}-\u{e01ef}]/gu;

/**
 * The prepared form: mapped (above), NFKC (compatibility forms such as fullwidth letters become
 * the ordinary ones), case-folded, NFKC again (a folded string may no longer be normalised, RFC
 * 3454 §3.2), then insignificant spaces removed (RFC 4518 §2.6.1: none at either end, a run of
 * them counts as one).
 *
 * Case folding is the full one RFC 4518 asks for (RFC 3454 table B.2: `ß` folds to `ss`), taken
 * as lower(upper(s)), which folds a few letters more than the table does (`ı` to `i`). For a
 * throttle key or the local-name rule folding more is the safe side: more spellings share one
 * back-off and one owner.
 */
export function preparedUsername(typed: string): string {
  const mapped = typed.replace(mappedToSpace, ' ').replace(mappedToNothing, '');
  const folded = mapped.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
  return folded.replace(/ {2,}/g, ' ').trim();
}
