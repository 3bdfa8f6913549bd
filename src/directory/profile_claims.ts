/**
 * The OIDC Core §5.1 standard claims an operator sets on a person (`latchkey users add|update`):
 * the command-line options, their rules, and how a change merges into the stored claims. Each rule
 * returns the cleaned value or throws AdminInputError with one line fit to print. Values are
 * released to clients as stored, so they are checked here, once, at the edge.
 */
import { postalAddressMembers, type PostalAddress, type UserProfileClaims } from '../store/store.js';
import { AdminInputError, validEmail, validName } from './validation.js';

/** The string claims of a profile besides the address, in the order OIDC Core §5.1 lists them. */
export type ProfileTextClaim = Exclude<keyof UserProfileClaims, 'phone_number_verified' | 'address'>;
export type AddressMember = keyof PostalAddress;

/** Option → claim, for the claims that are plain text, URLs or the special formats below. */
export const profileClaimOptions = {
  'given-name': 'given_name',
  'family-name': 'family_name',
  'middle-name': 'middle_name',
  nickname: 'nickname',
  // `--profile` would read as the client commands' credentials profile.
  'profile-url': 'profile',
  picture: 'picture',
  website: 'website',
  gender: 'gender',
  birthdate: 'birthdate',
  zoneinfo: 'zoneinfo',
  locale: 'locale',
  'phone-number': 'phone_number',
} as const satisfies Record<string, ProfileTextClaim>;

/** Option → member of the `address` claim (OIDC Core §5.1.1). */
export const addressOptions = {
  'street-address': 'street_address',
  locality: 'locality',
  region: 'region',
  'postal-code': 'postal_code',
  country: 'country',
  'address-formatted': 'formatted',
} as const satisfies Record<string, AddressMember>;

type OptionSpec = { type: 'string' } | { type: 'boolean' } | { type: 'string'; multiple: true };

const text = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

/** The parseArgs options both commands take (`update` adds --clear); `satisfies` keeps them in step with the two maps above. */
export const profileOptions = {
  'given-name': text,
  'family-name': text,
  'middle-name': text,
  nickname: text,
  'profile-url': text,
  picture: text,
  website: text,
  gender: text,
  birthdate: text,
  zoneinfo: text,
  locale: text,
  'phone-number': text,
  'street-address': text,
  locality: text,
  region: text,
  'postal-code': text,
  country: text,
  'address-formatted': text,
  'phone-number-verified': flag,
  'phone-number-unverified': flag,
} as const satisfies Record<keyof typeof profileClaimOptions | keyof typeof addressOptions | 'phone-number-verified' | 'phone-number-unverified', OptionSpec>;

/** Help lines for the profile options, in the commands' help style. */
export const profileOptionsHelp = [
  'Profile claims (OIDC standard claims; the profile, phone and address scopes release them):',
  '  --given-name <text>            given_name',
  '  --family-name <text>           family_name',
  '  --middle-name <text>           middle_name',
  '  --nickname <text>              nickname',
  '  --profile-url <url>            profile: a page about the person (http or https)',
  '  --picture <url>                picture (http or https)',
  '  --website <url>                website (http or https)',
  '  --gender <text>                gender: female, male, or any other word',
  '  --birthdate <date>             birthdate: YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY',
  '  --zoneinfo <zone>              zoneinfo: an IANA time zone such as Europe/Paris, or UTC',
  '  --locale <tag>                 locale: a BCP 47 language tag such as fr-CA (stored in canonical form)',
  '  --phone-number <number>        phone_number: an optional +, digits, spaces and ( ) - . and an optional ;ext=123',
  '  --phone-number-verified        phone_number_verified: true (--phone-number-unverified: false); a phone number',
  '                                 set or changed without either flag is unverified',
  '  --street-address <text>        address.street_address',
  '  --locality <text>              address.locality (city)',
  '  --region <text>                address.region (state, province)',
  '  --postal-code <text>           address.postal_code',
  '  --country <text>               address.country: an ISO 3166 code or a name',
  '  --address-formatted <text>     address.formatted: the whole address, \\n typed for each line break',
  'Text is trimmed and at most 256 characters (address parts but country 512), URLs 2048; control characters are refused.',
].join('\n');

const maxText = 256;
const maxAddressText = 512;
const maxUrl = 2048;

/** C0 and C1 controls and DEL (\p{Cc}): none may reach a claim, but for the formatted address's line breaks. */
const controlCharacter = /\p{Cc}/u;

function codePoints(value: string): number {
  return Array.from(value).length;
}

/** Trimmed text of 1–max characters with no control characters. */
export function validClaimText(value: string, option: string, max = maxText): string {
  const trimmed = value.trim();
  if (trimmed === '') throw new AdminInputError(`--${option} must not be empty`);
  if (codePoints(trimmed) > max) throw new AdminInputError(`--${option} must be at most ${max} characters`);
  if (controlCharacter.test(trimmed)) throw new AdminInputError(`--${option} must not contain control characters`);
  return trimmed;
}

/**
 * The formatted address: lines joined by "\n". A `\n` typed literally (shells make real newlines
 * awkward) is a line break, and so is a real CR LF or LF; each line is trimmed, and blank lines at
 * either end are dropped.
 */
export function validFormattedAddress(value: string, option = 'address-formatted'): string {
  const lines = value
    .replaceAll('\\n', '\n')
    .replaceAll('\r\n', '\n')
    .split('\n')
    .map((line) => line.trim());
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const joined = lines.join('\n');
  if (joined === '') throw new AdminInputError(`--${option} must not be empty`);
  if (codePoints(joined) > maxAddressText) throw new AdminInputError(`--${option} must be at most ${maxAddressText} characters`);
  if (controlCharacter.test(joined.replaceAll('\n', ''))) throw new AdminInputError(`--${option} must not contain control characters other than line breaks`);
  return joined;
}

/** An absolute http(s) URL of at most 2048 characters, without credentials; stored as given. */
export function validClaimUrl(value: string, option: string): string {
  const trimmed = value.trim();
  if (trimmed === '') throw new AdminInputError(`--${option} must not be empty`);
  if (trimmed.length > maxUrl) throw new AdminInputError(`--${option} must be at most ${maxUrl} characters`);
  if (/[\s\p{Cc}]/u.test(trimmed)) throw new AdminInputError(`--${option} must not contain spaces or control characters (percent-encode them)`);
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new AdminInputError(`--${option} "${trimmed.slice(0, 80)}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new AdminInputError(`--${option} must be an http or https URL`);
  if (url.hostname === '') throw new AdminInputError(`--${option} must name a host`);
  if (url.username !== '' || url.password !== '') throw new AdminInputError(`--${option} must not carry a user name or password`);
  return trimmed;
}

const daysInMonth = (year: number, month: number): number => {
  // Year 0000 stands for "withheld": any 29 February may be someone's birthday.
  const leap = year === 0 || (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0));
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
};

/**
 * OIDC Core §5.1 birthdate: YYYY-MM-DD (a real date), 0000-MM-DD when the year is withheld, or YYYY
 * alone; not in the future. `now` is epoch seconds; "today" is the latest date anywhere on Earth
 * (UTC+14), so a birth on the operator's today is never refused.
 */
export function validBirthdate(value: string, now: number, option = 'birthdate'): string {
  const trimmed = value.trim();
  const latest = new Date((now + 14 * 3600) * 1000);
  const [thisYear, thisMonth, thisDay] = [latest.getUTCFullYear(), latest.getUTCMonth() + 1, latest.getUTCDate()];
  const yearOnly = /^(\d{4})$/.exec(trimmed);
  if (yearOnly) {
    const year = Number(yearOnly[1]);
    if (year === 0) throw new AdminInputError(`--${option} 0000 withholds the year: give a month and day with it (0000-MM-DD), or no birthdate`);
    if (year > thisYear) throw new AdminInputError(`--${option} must not be in the future`);
    return trimmed;
  }
  const full = /^(\d{4})-(\d{2})-(\d{2})$/.exec(trimmed);
  if (!full) throw new AdminInputError(`--${option} must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY`);
  const [year, month, day] = [Number(full[1]), Number(full[2]), Number(full[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) throw new AdminInputError(`--${option} "${trimmed}" is not a real date`);
  if (year !== 0 && (year > thisYear || (year === thisYear && (month > thisMonth || (month === thisMonth && day > thisDay))))) {
    throw new AdminInputError(`--${option} must not be in the future`);
  }
  return trimmed;
}

let knownZones: Map<string, string> | undefined;

/** An IANA time zone Intl knows (its canonical names, and UTC), matched without regard to case and stored as Intl spells it. */
export function validZoneinfo(value: string, option = 'zoneinfo'): string {
  knownZones ??= new Map([...Intl.supportedValuesOf('timeZone'), 'UTC'].map((zone) => [zone.toLowerCase(), zone]));
  const zone = knownZones.get(value.trim().toLowerCase());
  if (zone === undefined)
    throw new AdminInputError(`--${option} "${value.trim().slice(0, 80)}" is not a known IANA time zone (e.g. Europe/Paris, America/New_York, UTC)`);
  return zone;
}

/** A BCP 47 language tag (RFC 5646), stored in canonical form (fr-ca → fr-CA). */
export function validLocale(value: string, option = 'locale'): string {
  const trimmed = value.trim();
  let canonical: string[];
  try {
    canonical = trimmed === '' || trimmed.length > maxText ? [] : Intl.getCanonicalLocales(trimmed);
  } catch {
    canonical = [];
  }
  const tag = canonical[0];
  if (tag === undefined) throw new AdminInputError(`--${option} "${trimmed.slice(0, 80)}" is not a BCP 47 language tag (e.g. en-US, fr-CA, zh-Hant-TW)`);
  return tag;
}

/**
 * A phone number as people write one (E.164 recommended, OIDC Core §5.1): an optional leading +,
 * digits, spaces and ( ) - . — 4 to 32 characters in all with at least 4 digits — and an optional
 * RFC 3966 extension `;ext=` with digits. Stored as given.
 */
export function validPhoneNumber(value: string, option = 'phone-number'): string {
  const trimmed = value.trim();
  const match = /^(\+?[0-9 ().-]+)(;ext=[0-9]+)?$/.exec(trimmed);
  const digits = match?.[1]?.replace(/[^0-9]/g, '').length ?? 0;
  if (!match || trimmed.length < 4 || trimmed.length > 32 || digits < 4) {
    throw new AdminInputError(
      `--${option} must be 4-32 characters: an optional +, at least 4 digits, spaces and ( ) - . and an optional ;ext=digits (e.g. +1 425 555 1212)`,
    );
  }
  return trimmed;
}

/** Validates one string claim given by its option. */
function validClaim(claim: ProfileTextClaim, option: string, value: string, now: number): string {
  switch (claim) {
    case 'profile':
    case 'picture':
    case 'website':
      return validClaimUrl(value, option);
    case 'birthdate':
      return validBirthdate(value, now, option);
    case 'zoneinfo':
      return validZoneinfo(value, option);
    case 'locale':
      return validLocale(value, option);
    case 'phone_number':
      return validPhoneNumber(value, option);
    default:
      return validClaimText(value, option);
  }
}

/** What the profile options of one command say: claims and address members to set, and the verified flag. */
export interface ProfileOptions {
  set: Omit<UserProfileClaims, 'address' | 'phone_number_verified'>;
  address: PostalAddress;
  /** true/false when a flag was given, undefined when neither. */
  phoneNumberVerified: boolean | undefined;
}

type OptionValues = Record<string, string | boolean | string[] | boolean[] | undefined>;

/** Reads and validates the profile options among a command's parsed values (`now`, epoch seconds, for birthdate). */
export function profileOptionsFrom(values: OptionValues, now: number): ProfileOptions {
  const set: ProfileOptions['set'] = {};
  for (const [option, claim] of Object.entries(profileClaimOptions)) {
    const value = values[option];
    if (typeof value === 'string') set[claim] = validClaim(claim, option, value, now);
  }
  const address: PostalAddress = {};
  for (const [option, member] of Object.entries(addressOptions)) {
    const value = values[option];
    if (typeof value !== 'string') continue;
    // A country is a code or a name (OIDC Core §5.1.1): a name's length, not a street's.
    address[member] =
      member === 'formatted' ? validFormattedAddress(value, option) : validClaimText(value, option, member === 'country' ? maxText : maxAddressText);
  }
  const verified = values['phone-number-verified'] === true;
  const unverified = values['phone-number-unverified'] === true;
  if (verified && unverified) throw new AdminInputError('--phone-number-verified and --phone-number-unverified cannot be combined');
  return { set, address, phoneNumberVerified: verified ? true : unverified ? false : undefined };
}

/** The names `--clear` accepts: the claims a person's record holds but for email, and the address's members. */
const clearableClaims = new Set<string>(['name', ...Object.values(profileClaimOptions), 'address']);
const addressMembers = new Set<string>(postalAddressMembers);

export interface ProfileClears {
  name: boolean;
  claims: Set<ProfileTextClaim | 'address'>;
  addressMembers: Set<AddressMember>;
}

/** The claims named by `--clear` (OIDC spellings; an address member clears just that member). */
export function validClears(names: string[]): ProfileClears {
  const clears: ProfileClears = { name: false, claims: new Set(), addressMembers: new Set() };
  for (const raw of names) {
    const name = raw.trim();
    if (name === 'name') clears.name = true;
    else if (clearableClaims.has(name)) clears.claims.add(name as ProfileTextClaim | 'address');
    else if (addressMembers.has(name)) clears.addressMembers.add(name as AddressMember);
    else if (name === 'email') throw new AdminInputError('--clear email: every user has an email; give another with --email');
    else if (name === 'phone_number_verified')
      throw new AdminInputError('--clear phone_number_verified: use --phone-number-unverified, or --clear phone_number');
    else {
      throw new AdminInputError(
        `--clear "${name.slice(0, 80)}" is not a claim that can be cleared: use name, ${[...clearableClaims].filter((c) => c !== 'name').join(', ')}, or an address member (${[...addressMembers].join(', ')})`,
      );
    }
  }
  return clears;
}

const sameAddress = (a: PostalAddress | undefined, b: PostalAddress | undefined): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** Address members in OIDC's order, so a merged address reads the same however it was built. */
function orderedAddress(address: PostalAddress): PostalAddress | undefined {
  const ordered: PostalAddress = {};
  for (const member of postalAddressMembers) {
    if (address[member] !== undefined) ordered[member] = address[member];
  }
  return Object.keys(ordered).length === 0 ? undefined : ordered;
}

/** Claims in OIDC Core §5.1's order. */
function orderedProfile(profile: UserProfileClaims): UserProfileClaims {
  const ordered: UserProfileClaims = {};
  for (const claim of Object.values(profileClaimOptions)) if (profile[claim] !== undefined) ordered[claim] = profile[claim];
  if (profile.phone_number !== undefined && profile.phone_number_verified !== undefined) ordered.phone_number_verified = profile.phone_number_verified;
  if (profile.address !== undefined) ordered.address = profile.address;
  return ordered;
}

/**
 * The stored claims with a change applied: given claims replace, address members merge into the
 * stored address, clears remove. A phone number set or changed without a flag is unverified; one
 * kept keeps its flag. A flag needs a phone number (given or stored).
 */
export function mergeProfile(
  stored: UserProfileClaims,
  options: ProfileOptions,
  clears: ProfileClears = { name: false, claims: new Set(), addressMembers: new Set() },
): UserProfileClaims {
  for (const claim of clears.claims) {
    if (claim === 'address' && Object.keys(options.address).length > 0) throw new AdminInputError('--clear address cannot be combined with address options');
    if (claim !== 'address' && options.set[claim] !== undefined) throw new AdminInputError(`--clear ${claim} cannot be combined with the option that sets it`);
    if (claim === 'phone_number' && options.phoneNumberVerified !== undefined)
      throw new AdminInputError('--clear phone_number cannot be combined with --phone-number-verified or --phone-number-unverified');
  }
  for (const member of clears.addressMembers) {
    if (options.address[member] !== undefined) throw new AdminInputError(`--clear ${member} cannot be combined with the option that sets it`);
  }
  const merged: UserProfileClaims = { ...stored, ...options.set };
  const changedNumber = options.set.phone_number !== undefined && options.set.phone_number !== stored.phone_number;
  if (options.phoneNumberVerified !== undefined) merged.phone_number_verified = options.phoneNumberVerified;
  else if (changedNumber) merged.phone_number_verified = false;
  let address: PostalAddress = { ...stored.address, ...options.address };
  for (const claim of clears.claims) {
    if (claim === 'address') address = {};
    else delete merged[claim];
  }
  for (const member of clears.addressMembers) delete address[member];
  const ordered = orderedAddress(address);
  if (ordered === undefined) delete merged.address;
  else merged.address = ordered;
  if (merged.phone_number === undefined) {
    if (options.phoneNumberVerified !== undefined)
      throw new AdminInputError('--phone-number-verified and --phone-number-unverified need a phone number (--phone-number)');
    delete merged.phone_number_verified;
  }
  return orderedProfile(merged);
}

/** The names of the claims that differ between two profiles (the address counts as one claim), in OIDC's order. */
export function changedProfileClaims(before: UserProfileClaims, after: UserProfileClaims): string[] {
  const changed: string[] = [];
  for (const claim of Object.values(profileClaimOptions)) if (before[claim] !== after[claim]) changed.push(claim);
  if (before.phone_number_verified !== after.phone_number_verified) changed.push('phone_number_verified');
  if (!sameAddress(before.address, after.address)) changed.push('address');
  return changed;
}

/** What `users update` asks of the store: only what differs from the stored user, and the names of the changed claims. */
export interface UserChange {
  change: { email?: string; name?: string | null; profile?: UserProfileClaims };
  changedClaims: string[];
}

/**
 * The change `latchkey users update` makes to a stored user: --email and --name replace, --clear
 * name removes the name, the profile options merge (mergeProfile). Throws AdminInputError when no
 * option at all was given.
 */
export function userChangeFrom(
  stored: { email: string; name: string | undefined; profile: UserProfileClaims },
  values: OptionValues & { clear?: string[]; email?: string; name?: string },
  now: number,
): UserChange {
  const clears = validClears(values.clear ?? []);
  const options = profileOptionsFrom(values, now);
  const givenEmail = values.email;
  const givenName = values.name;
  const email = givenEmail === undefined ? undefined : validEmail(givenEmail.trim());
  let name: string | null | undefined;
  if (givenName !== undefined) {
    if (clears.name) throw new AdminInputError('--clear name cannot be combined with --name');
    name = validName(givenName);
    if (name === undefined) throw new AdminInputError('--name must not be empty (--clear name removes the name)');
  } else if (clears.name) {
    name = null;
  }
  const anyProfileOption =
    Object.keys(options.set).length > 0 ||
    Object.keys(options.address).length > 0 ||
    options.phoneNumberVerified !== undefined ||
    clears.claims.size > 0 ||
    clears.addressMembers.size > 0;
  if (email === undefined && name === undefined && !anyProfileOption) {
    throw new AdminInputError('nothing to change: give --email, --name, a profile option or --clear <claim>');
  }
  const profile = anyProfileOption ? mergeProfile(stored.profile, options, clears) : undefined;
  return userChangeTo(stored, { email, name, profile });
}

/**
 * The change from a stored user to the values wanted (each checked already; undefined: left as it
 * is, a null name: removed): only what differs, and the names of the changed claims, in the order
 * `users update` reports them. Shared by the command and PATCH /api/v1/users/{username}.
 */
export function userChangeTo(
  stored: { email: string; name: string | undefined; profile: UserProfileClaims },
  wanted: { email?: string | undefined; name?: string | null | undefined; profile?: UserProfileClaims | undefined },
): UserChange {
  const change: UserChange['change'] = {};
  const changedClaims: string[] = [];
  if (wanted.email !== undefined && wanted.email !== stored.email) {
    change.email = wanted.email;
    changedClaims.push('email');
  }
  if (wanted.name !== undefined && (wanted.name ?? undefined) !== stored.name) {
    change.name = wanted.name;
    changedClaims.push('name');
  }
  const profileChanges = wanted.profile === undefined ? [] : changedProfileClaims(stored.profile, wanted.profile);
  if (profileChanges.length > 0) {
    change.profile = wanted.profile;
    changedClaims.push(...profileChanges);
  }
  return { change, changedClaims };
}

/** The profile a new user starts with (`users add`): the options given, a phone number unverified unless flagged. */
export function newUserProfile(values: OptionValues, now: number): UserProfileClaims {
  return mergeProfile({}, profileOptionsFrom(values, now));
}
