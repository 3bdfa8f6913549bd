/**
 * A released migration is never edited: a database that already ran it would never see the
 * change (the server refuses such a database at start, see src/store/migration_history.ts; this
 * catches the edit before it is released). Every migration file is listed here with its checksum
 * (SHA-256, line endings normalised) once it is on main. A new migration is added to the list in
 * the change that adds it; a change to a listed one belongs in a new migration instead.
 *
 * Both dialects follow one history: the same number and name for the same change, a file whose
 * body says why there is nothing to do where a change does not apply to one dialect. When the two
 * numberings became one, released files were renamed with their bytes unchanged, so they are listed
 * here with the checksums they were released with (src/store/migration_renumbering.ts maps the
 * old names).
 */
import { describe, expect, it } from 'vitest';
import { readMigrations } from '../../src/store/migration_files.js';
import { migrationChecksum } from '../../src/store/migration_history.js';
import { sqliteMigrationsDir, postgresMigrationsDir } from '../../src/paths.js';

const released: Record<'sqlite' | 'postgres', Record<string, string>> = {
  sqlite: {
    '0001_init.sql': '7d5801a51d6229c18ba5768800df16ce4e3f6d42ee175de30bb8eaeb8adc8142',
    '0002_authorization_code.sql': '92b1f22c7351987a316ec75f0bb444d3e873356ca5c5046094306aec61ce1778',
    '0003_directory_version.sql': 'b7d1150d70a053da2ca4721e88bf72e4a8dc97a4fe07211bf06c9109067810bc',
    '0004_rate_limits.sql': '5f0d1ba9ac6911afca8ef390fb82831c8731480b8b8ea8d63b9bdf8e33937330',
    '0005_hardening.sql': '22e96153c5ce70060e690ff851ca63a9fed6b1c55de4bed409c9496257f85c37',
    '0006_connectors.sql': '2d03921ff31b3499dbaa7fc85bf1f1bd653ec1700f1043ce2a32bf550a092593',
    '0007_second_factors.sql': '23a44dc5209d93d70f1893962d6c1ba0679cda3afb8bc351c89cc7e164268cf7',
    '0008_accounts.sql': '4a2b0f2e51512589cb9a7c512e5c2ecb3b4523ed2af1f013c213a0c7217f6953',
    '0009_roles.sql': '0433e99490798b5ecdfc6d116cdbb04f33a2e8dc40cf0f8cf543567e325f5111',
    '0010_registration.sql': '031185787a9c969e3f8a92fa1c7fadd8623bb7359de0a22405da3f9802f9d971',
    '0011_par.sql': 'dc23205f9664f2c29ed21b9b34ec38547a4d11decbd80dc88a80686526683e6e',
    '0012_dpop.sql': 'e2215d5a35d9c8b45bd2944f2633c3136a7842842e4f3424399d221249a6947c',
    '0013_profile_claims.sql': 'f503ebd85779eee9fae7514bd6f7f5d317a9b2ebfc81140b18229101940071af',
    '0014_directory_notify.sql': 'f070a2c5a84008154e76abeefc2503d8548526accc43860357169e482478156d',
    '0015_level_intermediate_builds.sql': '44369b9c8e5bf299bda49a0f789ce38d85c64cd56ca05792432209e914ce1753',
    '0016_lost_answers.sql': 'e07a17c7c894f881de1bd17935c0fd92e4abbc0f1e546ad3836691f4835c247b',
    '0017_factor_enrolment_links.sql': '941bea1b47ab0bf6f4f9e666f69cc37a32d3417f2cb06d56e03ce19290c5327b',
    '0018_removed_identities.sql': '59d9ed59656be8305431bdf749c0f7d69ead97f20c50c16db77d438864b9f13f',
    '0019_schema_parity.sql': '3b61c1bbdd79b983729336b8a200f639f482964761a5cbaee51e3580d8db6883',
    '0020_web_origins.sql': '2c01bc7da03ac5096326a7663af241c1a8c8ae03510a22c0e97c6851bbcb681b',
    '0021_recorded_issuer.sql': 'd6b00ab2ab8e381d8633d11e80b81d99355bfefb73b24fc9bbd19bdfb8d0bd3e',
    '0022_configuration_as_code.sql': 'c38b55e14e77ab0ad4d8bde79b98eec16c75fb7f31f536c3e84506e533706bfb',
    '0023_resource_leases.sql': 'f8de837938b1d3b50260c14ba7fc3e12c2b271d1224f1495084be0c4121e0100',
    '0024_readiness_probe.sql': '783643b69476214e3941790e3cdae15902f49736e76beb0d53fdd87d98ef1ad3',
    '0025_device_recovery_key.sql': 'bdd57d94bc099bf0c77d2044c4d7fefaad8d0c3eedd18ac99d84289b5ab1e57a',
  },
  postgres: {
    '0001_init.sql': 'aac3715458110ee12175b820fe43498645ec90116e0c6669dea851bf9b841247',
    '0002_authorization_code.sql': '686204a0ffe30eaae395c6a1e0e94faf4a7b1b17cc09f83feef52ce104cafa5d',
    '0003_directory_version.sql': '72560d0e055f200e228295ea86ee3a7f7b38190894e4bb5debeeb0dbc462ef93',
    '0004_rate_limits.sql': '1a780270004e3ff3c1975b53aa362948207591bd7de4b4364a8afe8fa0c70117',
    '0005_hardening.sql': '573a2460ba0691c17287ba9f5702157d01cbb151e233cda2f10063b6ccc4482d',
    '0006_connectors.sql': 'e2160adf7abd70bc9202bb7b7ac4ad5b8052a50e17100daf98069d8a09e2b5dc',
    '0007_second_factors.sql': '18ff634e72f2aa4dad901475f5e798eaacd729040cd25eda4315e1049226bfd2',
    '0008_accounts.sql': '00890a76d1c6844c3a53626cba44a5cfddef1dfc7f920f3f5cf7a35d9661b26c',
    '0009_roles.sql': '9d04d94e1ea0fca7d3b18516141ce400d93a4c8def9c4ac84e66051302416a40',
    '0010_registration.sql': '226c32b3dd8a60ed141d2761c130bedba539efa0cd2a6f5fbe399edb5d67a832',
    '0011_par.sql': '084830d121e43761ff3f3763d88cc5899e86295145123c6dfe001c4ebcd29860',
    '0012_dpop.sql': 'e2215d5a35d9c8b45bd2944f2633c3136a7842842e4f3424399d221249a6947c',
    '0013_profile_claims.sql': 'efb53ea0ca3fc63f532cbf95a9f937ca2d7869103777f467c642563a6f67158f',
    '0014_directory_notify.sql': '4035561c177bce99b05a5a90fb6cdd8cce80ec5e62d070f7252d94dccc5a98f5',
    '0015_level_intermediate_builds.sql': '5a374e99eb1452fdd87e9c561d2bc68b315305151d45851294c87f2fd74a6450',
    '0016_lost_answers.sql': '36ff0176d3e31ad8982ed6d013092a63487dbb8e411f1537cde201a2f3155d85',
    '0017_factor_enrolment_links.sql': '5694404f45f151ecc39fe45aa14d8a8ed5630a835958adb32d9b7316e6a25081',
    '0018_removed_identities.sql': '94b79d54bfc0319a39ea7804adf12354f67b6ceb35cd4f5510064ce7d152fb82',
    '0019_schema_parity.sql': '15d3ffeb1a93226e9dd486b494e4dfbfe52874091c5fc87ac8a2dd7b760515f0',
    '0020_web_origins.sql': '2c01bc7da03ac5096326a7663af241c1a8c8ae03510a22c0e97c6851bbcb681b',
    '0021_recorded_issuer.sql': '96b8b0a80216d1bb9d5ede1a955082f1d18f1d9c0b0dbdfc89a27806cfd9321e',
    '0022_configuration_as_code.sql': '2a1f8180865d31c39bb6f6ce49c5aa7eafa7afa6dedc48f7c769760ca9881938',
    '0023_resource_leases.sql': '318c71c0f1f70dbdea6b62b10f67a459121141c0abd4a2ea9c6811ce83b261c3',
    '0024_readiness_probe.sql': 'adb31bec09d81f1871f7d29711df3a0bfd0be96181cc4d67b9ec0b3b7a3ee93b',
    '0025_device_recovery_key.sql': 'bdd57d94bc099bf0c77d2044c4d7fefaad8d0c3eedd18ac99d84289b5ab1e57a',
  },
};

describe.each([
  ['sqlite', sqliteMigrationsDir],
  ['postgres', postgresMigrationsDir],
] as const)('the %s migrations', (store, dir) => {
  const files = readMigrations(dir);

  it('are all listed, and each listed one is there unchanged', () => {
    const actual = Object.fromEntries(files.map((m) => [m.name, migrationChecksum(m.sql)]));
    for (const [name, checksum] of Object.entries(released[store])) {
      expect(actual[name], `${name} is released: it may not be removed or renamed`).toBeDefined();
      expect(actual[name], `${name} is released: put the change in a new migration instead of editing it`).toBe(checksum);
    }
    for (const [name, checksum] of Object.entries(actual)) {
      expect(released[store][name], `${name} is new: add  '${name}': '${checksum}',  to the list in this file`).toBe(checksum);
    }
  });

  it('are numbered one after another from 0001, each number once', () => {
    expect(files.map((m) => m.version)).toEqual(files.map((_, i) => i + 1));
  });
});

describe('the two dialects', () => {
  it('have the same numbers and names, one history', () => {
    const names = (dir: string) => readMigrations(dir).map((m) => m.name);
    expect(names(postgresMigrationsDir)).toEqual(names(sqliteMigrationsDir));
  });
});
