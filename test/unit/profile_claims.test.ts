/**
 * The rules for the OIDC standard claims operators set (`latchkey users add|update`), one by one
 * with good and bad values, and how a change merges into the stored claims.
 */
import { describe, it, expect } from 'vitest';
import { AdminInputError } from '../../src/directory/validation.js';
import {
  changedProfileClaims,
  mergeProfile,
  newUserProfile,
  profileOptionsFrom,
  userChangeFrom,
  validBirthdate,
  validClaimText,
  validClaimUrl,
  validClears,
  validFormattedAddress,
  validLocale,
  validPhoneNumber,
  validZoneinfo,
} from '../../src/directory/profile_claims.js';
import type { UserProfileClaims } from '../../src/store/store.js';

/** 2027-01-15T12:00:00Z: "today" of the birthdate rules. */
const now = Date.UTC(2027, 0, 15, 12) / 1000;

function refusal(fn: () => unknown): AdminInputError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AdminInputError) return err;
    throw err;
  }
  throw new Error('did not throw');
}

const show = (value: string) => JSON.stringify(value.length > 24 ? `${value.slice(0, 10)}…(${value.length})` : value);

describe('validClaimText (names, nickname, gender, address parts)', () => {
  for (const [given, stored] of [
    ['Alice', 'Alice'],
    ['  Alice  ', 'Alice'],
    ['Zoë Ångström-Øre', 'Zoë Ångström-Øre'],
    ['李', '李'],
    ['x'.repeat(256), 'x'.repeat(256)],
    ['😀'.repeat(256), '😀'.repeat(256)],
    ['non-binary', 'non-binary'],
  ] as const) {
    it(`accepts ${show(given)}`, () => {
      expect(validClaimText(given, 'given-name')).toBe(stored);
    });
  }
  for (const [bad, message] of [
    ['', '--given-name must not be empty'],
    ['   ', '--given-name must not be empty'],
    ['x'.repeat(257), '--given-name must be at most 256 characters'],
    ['Al\nice', '--given-name must not contain control characters'],
    ['Al\tice', '--given-name must not contain control characters'],
    ['Al\u0000ice', '--given-name must not contain control characters'],
    ['Al\u007fice', '--given-name must not contain control characters'],
    ['Al\u0085ice', '--given-name must not contain control characters'],
    ['Al\u001bice', '--given-name must not contain control characters'],
  ] as const) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validClaimText(bad, 'given-name')).message).toBe(message);
    });
  }
  it('address parts may be 512 characters', () => {
    expect(validClaimText('x'.repeat(512), 'street-address', 512)).toHaveLength(512);
    expect(refusal(() => validClaimText('x'.repeat(513), 'street-address', 512)).message).toBe('--street-address must be at most 512 characters');
  });
});

describe('validFormattedAddress', () => {
  it('turns a typed \\n and real line breaks into line breaks, trimming each line', () => {
    expect(validFormattedAddress('1 Main St\\nSpringfield, IL 62701\\nUSA')).toBe('1 Main St\nSpringfield, IL 62701\nUSA');
    expect(validFormattedAddress(' 1 Main St \r\n Springfield \n')).toBe('1 Main St\nSpringfield');
    expect(validFormattedAddress('\\n\\nOne line\\n')).toBe('One line');
    expect(validFormattedAddress('x'.repeat(512))).toHaveLength(512);
  });
  for (const [bad, message] of [
    ['', '--address-formatted must not be empty'],
    ['\\n \\n', '--address-formatted must not be empty'],
    ['x'.repeat(513), '--address-formatted must be at most 512 characters'],
    ['1 Main St\tSpringfield', '--address-formatted must not contain control characters other than line breaks'],
    ['1 Main St\rSpringfield', '--address-formatted must not contain control characters other than line breaks'],
    ['1 Main St\u0000', '--address-formatted must not contain control characters other than line breaks'],
  ] as const) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validFormattedAddress(bad)).message).toBe(message);
    });
  }
});

describe('validClaimUrl (profile, picture, website)', () => {
  for (const good of [
    'https://example.com/~alice',
    'http://example.com',
    'https://example.com:8443/a?b=c#d',
    ' https://example.com/p.png ',
    `https://example.com/${'a'.repeat(2028)}`,
  ]) {
    it(`accepts ${show(good)}`, () => {
      expect(validClaimUrl(good, 'picture')).toBe(good.trim());
    });
  }
  for (const [bad, message] of [
    ['', '--picture must not be empty'],
    ['example.com/alice', '--picture "example.com/alice" is not an absolute URL'],
    ['/alice.png', '--picture "/alice.png" is not an absolute URL'],
    ['ftp://example.com/a.png', '--picture must be an http or https URL'],
    ['javascript:alert(1)', '--picture must be an http or https URL'],
    ['data:image/png;base64,AAAA', '--picture must be an http or https URL'],
    ['https://user:pw@example.com/a.png', '--picture must not carry a user name or password'],
    ['https://example.com/a b.png', '--picture must not contain spaces or control characters (percent-encode them)'],
    ['https://example.com/a\u0000', '--picture must not contain spaces or control characters (percent-encode them)'],
    [`https://example.com/${'a'.repeat(2029)}`, '--picture must be at most 2048 characters'],
  ] as const) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validClaimUrl(bad, 'picture')).message).toBe(message);
    });
  }
});

describe('validBirthdate', () => {
  for (const good of ['1990-05-04', '0000-05-04', '0000-02-29', '2024-02-29', '2000-02-29', '1990', '2027', '2027-01-15', '2027-01-16', ' 1990-12-31 ']) {
    it(`accepts ${show(good)}`, () => {
      expect(validBirthdate(good, now)).toBe(good.trim());
    });
  }
  for (const [bad, message] of [
    ['', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['1990-5-4', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['04/05/1990', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['1990-05', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['90', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['1990-05-04T00:00:00Z', '--birthdate must be YYYY-MM-DD, 0000-MM-DD (year withheld) or YYYY'],
    ['1990-13-01', '--birthdate "1990-13-01" is not a real date'],
    ['1990-00-10', '--birthdate "1990-00-10" is not a real date'],
    ['1990-04-31', '--birthdate "1990-04-31" is not a real date'],
    ['1990-01-00', '--birthdate "1990-01-00" is not a real date'],
    ['2023-02-29', '--birthdate "2023-02-29" is not a real date'],
    ['1900-02-29', '--birthdate "1900-02-29" is not a real date'],
    ['0000-02-30', '--birthdate "0000-02-30" is not a real date'],
    ['0000', '--birthdate 0000 withholds the year: give a month and day with it (0000-MM-DD), or no birthdate'],
    ['2028', '--birthdate must not be in the future'],
    ['2027-01-17', '--birthdate must not be in the future'],
    ['2027-02-01', '--birthdate must not be in the future'],
    ['2100-01-01', '--birthdate must not be in the future'],
  ] as const) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validBirthdate(bad, now)).message).toBe(message);
    });
  }
});

describe('validZoneinfo', () => {
  for (const [given, stored] of [
    ['Europe/Paris', 'Europe/Paris'],
    ['America/New_York', 'America/New_York'],
    ['america/new_york', 'America/New_York'],
    ['UTC', 'UTC'],
    ['utc', 'UTC'],
    [' Asia/Tokyo ', 'Asia/Tokyo'],
  ] as const) {
    it(`accepts ${show(given)}`, () => {
      expect(validZoneinfo(given)).toBe(stored);
    });
  }
  for (const bad of ['', 'Paris', 'Europe/Atlantis', 'GMT+2', '+02:00', 'Europe/Paris/x']) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validZoneinfo(bad)).message).toMatch(
        /^--zoneinfo ".*" is not a known IANA time zone \(e\.g\. Europe\/Paris, America\/New_York, UTC\)$/,
      );
    });
  }
});

describe('validLocale', () => {
  for (const [given, stored] of [
    ['fr-CA', 'fr-CA'],
    ['en-us', 'en-US'],
    ['EN', 'en'],
    ['zh-hant-tw', 'zh-Hant-TW'],
    ['de-DE-1996', 'de-DE-1996'],
    [' es-419 ', 'es-419'],
  ] as const) {
    it(`accepts ${show(given)} as ${stored}`, () => {
      expect(validLocale(given)).toBe(stored);
    });
  }
  for (const bad of ['', 'en_US', 'en US', 'englishes', '123', 'en--US', 'x'.repeat(300)]) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validLocale(bad)).message).toMatch(/^--locale ".*" is not a BCP 47 language tag \(e\.g\. en-US, fr-CA, zh-Hant-TW\)$/);
    });
  }
});

describe('validPhoneNumber', () => {
  for (const good of [
    '+1 (425) 555-1212',
    '+14255551212',
    '0123',
    '+33 1 23 45 67 89',
    '555.1212',
    '+1 425 555 1212;ext=1234',
    ' +44 20 7946 0958 ',
    '1'.repeat(32),
  ]) {
    it(`accepts ${show(good)}`, () => {
      expect(validPhoneNumber(good)).toBe(good.trim());
    });
  }
  for (const bad of [
    '',
    '123',
    '+123',
    '(12)',
    '1'.repeat(33),
    '+1 425 555 1212;ext=',
    '+1 425 555 1212;ext=12a',
    '+1 425 555 1212 ext 12',
    '1+2345',
    'tel:+14255551212',
    '+1-800-FLOWERS',
    '++14255551212',
    '+1\u00a0425 555 1212',
    '+1\n4255551212',
  ]) {
    it(`rejects ${show(bad)}`, () => {
      expect(refusal(() => validPhoneNumber(bad)).message).toBe(
        '--phone-number must be 4-32 characters: an optional +, at least 4 digits, spaces and ( ) - . and an optional ;ext=digits (e.g. +1 425 555 1212)',
      );
    });
  }
});

describe('profileOptionsFrom: each option to its claim, validated', () => {
  it('reads every option', () => {
    const options = profileOptionsFrom(
      {
        'given-name': ' Alice ',
        'family-name': 'Liddell',
        'middle-name': 'Pleasance',
        nickname: 'Al',
        'profile-url': 'https://example.com/~alice',
        picture: 'https://example.com/a.png',
        website: 'https://alice.example',
        gender: 'female',
        birthdate: '0000-05-04',
        zoneinfo: 'europe/london',
        locale: 'en-gb',
        'phone-number': '+44 20 7946 0958',
        'phone-number-verified': true,
        'street-address': 'Christ Church, St Aldates',
        locality: 'Oxford',
        region: 'Oxfordshire',
        'postal-code': 'OX1 1DP',
        country: 'GB',
        'address-formatted': 'Christ Church\\nOxford',
        email: 'ignored@example.com',
      },
      now,
    );
    expect(options).toStrictEqual({
      set: {
        given_name: 'Alice',
        family_name: 'Liddell',
        middle_name: 'Pleasance',
        nickname: 'Al',
        profile: 'https://example.com/~alice',
        picture: 'https://example.com/a.png',
        website: 'https://alice.example',
        gender: 'female',
        birthdate: '0000-05-04',
        zoneinfo: 'Europe/London',
        locale: 'en-GB',
        phone_number: '+44 20 7946 0958',
      },
      address: {
        street_address: 'Christ Church, St Aldates',
        locality: 'Oxford',
        region: 'Oxfordshire',
        postal_code: 'OX1 1DP',
        country: 'GB',
        formatted: 'Christ Church\nOxford',
      },
      phoneNumberVerified: true,
    });
  });

  it('names the option in its errors, and refuses both phone flags at once', () => {
    expect(refusal(() => profileOptionsFrom({ 'profile-url': 'nope' }, now)).message).toBe('--profile-url "nope" is not an absolute URL');
    expect(refusal(() => profileOptionsFrom({ website: 'ftp://x.example' }, now)).message).toBe('--website must be an http or https URL');
    expect(refusal(() => profileOptionsFrom({ country: '' }, now)).message).toBe('--country must not be empty');
    expect(refusal(() => profileOptionsFrom({ country: 'x'.repeat(257) }, now)).message).toBe('--country must be at most 256 characters');
    expect(refusal(() => profileOptionsFrom({ 'postal-code': 'x'.repeat(513) }, now)).message).toBe('--postal-code must be at most 512 characters');
    expect(refusal(() => profileOptionsFrom({ 'phone-number-verified': true, 'phone-number-unverified': true }, now)).message).toBe(
      '--phone-number-verified and --phone-number-unverified cannot be combined',
    );
  });

  it('country: a code or a name, 1-256 characters', () => {
    expect(profileOptionsFrom({ country: 'FR' }, now).address).toStrictEqual({ country: 'FR' });
    expect(profileOptionsFrom({ country: ' United Kingdom of Great Britain and Northern Ireland ' }, now).address).toStrictEqual({
      country: 'United Kingdom of Great Britain and Northern Ireland',
    });
    expect(profileOptionsFrom({ country: 'x'.repeat(256) }, now).address.country).toHaveLength(256);
  });
});

describe('newUserProfile (users add)', () => {
  it('is {} with no options', () => {
    expect(newUserProfile({ email: 'a@example.com' }, now)).toStrictEqual({});
  });
  it('a phone number without a flag is unverified; with one, as flagged', () => {
    expect(newUserProfile({ 'phone-number': '+1 425 555 1212' }, now)).toStrictEqual({ phone_number: '+1 425 555 1212', phone_number_verified: false });
    expect(newUserProfile({ 'phone-number': '+1 425 555 1212', 'phone-number-verified': true }, now)).toStrictEqual({
      phone_number: '+1 425 555 1212',
      phone_number_verified: true,
    });
    expect(newUserProfile({ 'phone-number': '+1 425 555 1212', 'phone-number-unverified': true }, now)).toStrictEqual({
      phone_number: '+1 425 555 1212',
      phone_number_verified: false,
    });
  });
  it('a phone flag needs a phone number', () => {
    expect(refusal(() => newUserProfile({ 'phone-number-verified': true }, now)).message).toBe(
      '--phone-number-verified and --phone-number-unverified need a phone number (--phone-number)',
    );
  });
  it('builds the address from its parts, in OIDC order', () => {
    const profile = newUserProfile({ country: 'US', locality: 'Springfield', 'address-formatted': '1 Main St\\nSpringfield' }, now);
    expect(profile).toStrictEqual({ address: { formatted: '1 Main St\nSpringfield', locality: 'Springfield', country: 'US' } });
    expect(Object.keys(profile.address!)).toEqual(['formatted', 'locality', 'country']);
  });
});

describe('validClears', () => {
  it('takes claim names as OIDC spells them, and address members', () => {
    const clears = validClears(['name', 'given_name', 'phone_number', 'address', 'locality', 'profile']);
    expect(clears.name).toBe(true);
    expect([...clears.claims]).toEqual(['given_name', 'phone_number', 'address', 'profile']);
    expect([...clears.addressMembers]).toEqual(['locality']);
  });
  it('refuses email, phone_number_verified and anything else', () => {
    expect(refusal(() => validClears(['email'])).message).toBe('--clear email: every user has an email; give another with --email');
    expect(refusal(() => validClears(['phone_number_verified'])).message).toBe(
      '--clear phone_number_verified: use --phone-number-unverified, or --clear phone_number',
    );
    for (const bad of ['given-name', 'sub', 'preferred_username', 'updated_at', 'GIVEN_NAME', '']) {
      expect(refusal(() => validClears([bad])).message, bad).toMatch(
        /^--clear ".*" is not a claim that can be cleared: use name, given_name, .*address, or an address member \(formatted, street_address, locality, region, postal_code, country\)$/,
      );
    }
  });
});

describe('mergeProfile and userChangeFrom (users update)', () => {
  const stored: UserProfileClaims = {
    given_name: 'Alice',
    nickname: 'Al',
    phone_number: '+1 425 555 1212',
    phone_number_verified: true,
    address: { street_address: '1 Main St', locality: 'Springfield', country: 'US' },
  };
  const alice = { email: 'alice@example.com', name: 'Alice Example', profile: stored };

  it('merges given claims and address members into the stored ones', () => {
    const { change, changedClaims } = userChangeFrom(alice, { 'family-name': 'Liddell', locality: 'Shelbyville', 'postal-code': '62565' }, now);
    expect(change).toStrictEqual({
      profile: {
        given_name: 'Alice',
        family_name: 'Liddell',
        nickname: 'Al',
        phone_number: '+1 425 555 1212',
        phone_number_verified: true,
        address: { street_address: '1 Main St', locality: 'Shelbyville', postal_code: '62565', country: 'US' },
      },
    });
    expect(changedClaims).toEqual(['family_name', 'address']);
  });

  it('--clear removes claims, the whole address or one member of it; the name with --clear name', () => {
    expect(userChangeFrom(alice, { clear: ['nickname', 'country'] }, now).change.profile).toStrictEqual({
      given_name: 'Alice',
      phone_number: '+1 425 555 1212',
      phone_number_verified: true,
      address: { street_address: '1 Main St', locality: 'Springfield' },
    });
    expect(userChangeFrom(alice, { clear: ['address'] }, now).change.profile?.address).toBeUndefined();
    // The last member gone: no address at all.
    const small = { ...alice, profile: { address: { country: 'US' } } };
    expect(userChangeFrom(small, { clear: ['country'] }, now)).toStrictEqual({ change: { profile: {} }, changedClaims: ['address'] });
    // The phone number takes its flag along.
    expect(userChangeFrom(alice, { clear: ['phone_number'] }, now)).toMatchObject({ changedClaims: ['phone_number', 'phone_number_verified'] });
    expect(userChangeFrom(alice, { clear: ['phone_number'] }, now).change.profile).not.toHaveProperty('phone_number_verified');
    expect(userChangeFrom(alice, { clear: ['name'] }, now)).toStrictEqual({ change: { name: null }, changedClaims: ['name'] });
  });

  it('email and name replace; unchanged values are no change', () => {
    expect(userChangeFrom(alice, { email: 'alice@new.example', name: ' Alice Liddell ' }, now)).toStrictEqual({
      change: { email: 'alice@new.example', name: 'Alice Liddell' },
      changedClaims: ['email', 'name'],
    });
    expect(userChangeFrom(alice, { email: 'alice@example.com', name: 'Alice Example', nickname: 'Al', locality: 'Springfield' }, now)).toStrictEqual({
      change: {},
      changedClaims: [],
    });
    expect(userChangeFrom({ ...alice, name: undefined }, { clear: ['name'] }, now)).toStrictEqual({ change: {}, changedClaims: [] });
  });

  it('a new phone number without a flag is unverified; the same number keeps its flag; a flag alone sets it', () => {
    expect(userChangeFrom(alice, { 'phone-number': '+1 206 555 0100' }, now).change.profile).toMatchObject({
      phone_number: '+1 206 555 0100',
      phone_number_verified: false,
    });
    expect(userChangeFrom(alice, { 'phone-number': '+1 425 555 1212' }, now).changedClaims).toEqual([]);
    expect(userChangeFrom(alice, { 'phone-number': '+1 206 555 0100', 'phone-number-verified': true }, now).change.profile).toMatchObject({
      phone_number_verified: true,
    });
    expect(userChangeFrom(alice, { 'phone-number-unverified': true }, now)).toMatchObject({ changedClaims: ['phone_number_verified'] });
    expect(refusal(() => userChangeFrom({ ...alice, profile: {} }, { 'phone-number-verified': true }, now)).message).toBe(
      '--phone-number-verified and --phone-number-unverified need a phone number (--phone-number)',
    );
  });

  it('at least one change is required, and contradictions are refused', () => {
    expect(refusal(() => userChangeFrom(alice, {}, now)).message).toBe('nothing to change: give --email, --name, a profile option or --clear <claim>');
    expect(refusal(() => userChangeFrom(alice, { clear: [] }, now)).message).toBe(
      'nothing to change: give --email, --name, a profile option or --clear <claim>',
    );
    expect(refusal(() => userChangeFrom(alice, { name: 'A', clear: ['name'] }, now)).message).toBe('--clear name cannot be combined with --name');
    expect(refusal(() => userChangeFrom(alice, { name: '  ' }, now)).message).toBe('--name must not be empty (--clear name removes the name)');
    expect(refusal(() => userChangeFrom(alice, { nickname: 'B', clear: ['nickname'] }, now)).message).toBe(
      '--clear nickname cannot be combined with the option that sets it',
    );
    expect(refusal(() => userChangeFrom(alice, { locality: 'X', clear: ['address'] }, now)).message).toBe(
      '--clear address cannot be combined with address options',
    );
    expect(refusal(() => userChangeFrom(alice, { locality: 'X', clear: ['locality'] }, now)).message).toBe(
      '--clear locality cannot be combined with the option that sets it',
    );
    expect(refusal(() => userChangeFrom(alice, { 'phone-number-verified': true, clear: ['phone_number'] }, now)).message).toBe(
      '--clear phone_number cannot be combined with --phone-number-verified or --phone-number-unverified',
    );
    expect(refusal(() => userChangeFrom(alice, { email: 'not-an-address' }, now)).message).toBe('"not-an-address" is not a valid email address');
    expect(refusal(() => userChangeFrom(alice, { birthdate: '2030-01-01' }, now)).message).toBe('--birthdate must not be in the future');
  });

  it('changedProfileClaims names the claims that differ, the address as one', () => {
    expect(changedProfileClaims({}, {})).toEqual([]);
    expect(changedProfileClaims(stored, { ...stored, address: { ...stored.address, region: 'IL' } })).toEqual(['address']);
    expect(changedProfileClaims(stored, {})).toEqual(['given_name', 'nickname', 'phone_number', 'phone_number_verified', 'address']);
  });

  it('mergeProfile orders claims as OIDC Core §5.1 lists them', () => {
    const merged = mergeProfile({ locale: 'fr-FR', given_name: 'Zoé' }, profileOptionsFrom({ nickname: 'Z', 'family-name': 'X' }, now));
    expect(Object.keys(merged)).toEqual(['given_name', 'family_name', 'nickname', 'locale']);
  });
});
