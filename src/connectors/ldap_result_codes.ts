/**
 * LDAP result codes by name (RFC 4511 §4.1.9 and Appendix A), so that a log line and an operator
 * read `invalidCredentials (0x31)` rather than a bare `Code: 0x31`.
 */
const resultNames: ReadonlyMap<number, string> = new Map([
  [0, 'success'],
  [1, 'operationsError'],
  [2, 'protocolError'],
  [3, 'timeLimitExceeded'],
  [4, 'sizeLimitExceeded'],
  [5, 'compareFalse'],
  [6, 'compareTrue'],
  [7, 'authMethodNotSupported'],
  [8, 'strongerAuthRequired'],
  [10, 'referral'],
  [11, 'adminLimitExceeded'],
  [12, 'unavailableCriticalExtension'],
  [13, 'confidentialityRequired'],
  [14, 'saslBindInProgress'],
  [16, 'noSuchAttribute'],
  [17, 'undefinedAttributeType'],
  [18, 'inappropriateMatching'],
  [19, 'constraintViolation'],
  [20, 'attributeOrValueExists'],
  [21, 'invalidAttributeSyntax'],
  [32, 'noSuchObject'],
  [33, 'aliasProblem'],
  [34, 'invalidDNSyntax'],
  [36, 'aliasDereferencingProblem'],
  [48, 'inappropriateAuthentication'],
  [49, 'invalidCredentials'],
  [50, 'insufficientAccessRights'],
  [51, 'busy'],
  [52, 'unavailable'],
  [53, 'unwillingToPerform'],
  [54, 'loopDetect'],
  [64, 'namingViolation'],
  [65, 'objectClassViolation'],
  [66, 'notAllowedOnNonLeaf'],
  [67, 'notAllowedOnRDN'],
  [68, 'entryAlreadyExists'],
  [69, 'objectClassModsProhibited'],
  [71, 'affectsMultipleDSAs'],
  [80, 'other'],
]);

/** `invalidCredentials, 0x31`: the name RFC 4511 gives the code, and the code as directories log it. */
export function ldapResultLabel(code: number): string {
  const hex = `0x${code.toString(16)}`;
  const name = resultNames.get(code);
  return name === undefined ? `result code ${hex}` : `${name}, ${hex}`;
}

/**
 * Codes that say the directory is there but busy or going away (RFC 4511 Appendix A: "the server
 * is ... unable to process"): worth trying again later, unlike a refusal of what we asked.
 */
export const ldapTransientCodes: ReadonlySet<number> = new Set([3, 11, 51, 52]);
