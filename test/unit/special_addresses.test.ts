/**
 * Address classification for the outbound guard: IPv4, IPv6 and the IPv6 forms that carry an IPv4
 * address, each judged by where a connection to it would go; and the allow-list's CIDR matching.
 */
import { describe, expect, it } from 'vitest';
import { addressClass, type AddressClass } from '../../src/net/special_addresses.js';
import { inCidr, parseCidr, parseIp } from '../../src/net/ip_address.js';
import { addressRefusal, emptyAllowList, literalTargetRefusal, parseOutboundAllowList } from '../../src/net/outbound_policy.js';

const table: [string, AddressClass][] = [
  // IPv4
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.15.255.255', 'public'],
  ['172.32.0.0', 'public'],
  ['192.168.1.1', 'private'],
  ['169.254.169.254', 'link-local'],
  ['169.254.0.1', 'link-local'],
  ['100.64.0.1', 'shared'],
  ['100.127.255.255', 'shared'],
  ['100.128.0.0', 'public'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['255.255.255.255', 'reserved'],
  ['240.0.0.1', 'reserved'],
  ['192.0.0.170', 'reserved'],
  ['192.0.2.10', 'reserved'],
  ['198.18.0.1', 'reserved'],
  ['198.51.100.7', 'reserved'],
  ['203.0.113.9', 'reserved'],
  ['8.8.8.8', 'public'],
  ['93.184.216.34', 'public'],
  ['1.1.1.1', 'public'],
  // IPv6
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::', 'unspecified'],
  ['fc00::1', 'private'],
  ['fd12:3456:789a::1', 'private'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf::1', 'link-local'],
  ['fec0::1', 'private'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['2001::1', 'reserved'],
  ['100::1', 'reserved'],
  ['::7f00:1', 'reserved'],
  ['2606:4700:4700::1111', 'public'],
  ['2001:4860:4860::8888', 'public'],
  // IPv4 inside IPv6: judged by the IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['[::ffff:169.254.169.254]', 'link-local'],
  ['::ffff:a9fe:a9fe', 'link-local'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:8.8.8.8', 'public'],
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::a00:1', 'private'],
  ['64:ff9b::808:808', 'public'],
  ['64:ff9b:1::1', 'private'],
  ['2002:7f00:1::1', 'loopback'],
  ['2002:a9fe:a9fe::', 'link-local'],
  ['2002:808:808::1', 'public'],
];

describe('addressClass', () => {
  for (const [address, kind] of table) {
    it(`${address} → ${kind}`, () => {
      expect(addressClass(address)).toBe(kind);
    });
  }

  it('names are not addresses: 127.1, 0x7f.0.0.1, 2130706433 and localhost are left to DNS', () => {
    for (const name of ['127.1', '0x7f.0.0.1', '2130706433', 'localhost', '', '1.2.3.4.5', '::1::']) expect(addressClass(name)).toBeUndefined();
  });

  it('the URL parser turns numeric hosts into the dotted form that is judged', () => {
    for (const host of ['http://0x7f.1/', 'http://2130706433/', 'http://0177.0.0.1/', 'http://127.1/'])
      expect(addressClass(new URL(host).hostname)).toBe('loopback');
    expect(addressClass(new URL('http://[::ffff:127.0.0.1]/').hostname)).toBe('loopback');
  });
});

describe('CIDR blocks', () => {
  const cases: [string, string, boolean][] = [
    ['10.0.0.0/8', '10.200.1.1', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['10.20.0.0/16', '::ffff:10.20.3.4', true],
    ['127.0.0.1', '127.0.0.1', true],
    ['127.0.0.1', '127.0.0.2', false],
    ['172.16.0.0/12', '172.31.0.1', true],
    ['172.16.0.0/12', '172.32.0.1', false],
    ['fd00::/8', 'fd12::1', true],
    ['fd00::/8', 'fc00::1', false],
    ['::1', '::1', true],
    ['0.0.0.0/0', '8.8.8.8', true],
    ['0.0.0.0/0', '2001:4860::1', false],
    ['10.1.2.3/8', '10.9.9.9', true],
  ];
  for (const [block, address, inside] of cases) {
    it(`${address} ${inside ? 'is' : 'is not'} in ${block}`, () => {
      expect(inCidr(parseIp(address)!, parseCidr(block)!)).toBe(inside);
    });
  }

  it('refuses what is not a block', () => {
    for (const bad of ['10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/8', '10.0.0.0/x', 'example.com/8', 'fe80::1%eth0/64']) expect(parseCidr(bad)).toBeUndefined();
  });
});

describe('the outbound policy', () => {
  const allow = parseOutboundAllowList('jwks.corp.example, 10.20.0.0/16, 127.0.0.1')!;

  it('public addresses pass; internal ones are refused with their class', () => {
    expect(addressRefusal('rp.example.com', '93.184.216.34', emptyAllowList)).toBeUndefined();
    expect(addressRefusal('rp.example.com', '127.0.0.1', emptyAllowList)).toBe('loopback address 127.0.0.1');
    expect(addressRefusal('rp.example.com', '::ffff:169.254.169.254', emptyAllowList)).toBe('link-local address ::ffff:169.254.169.254');
  });

  it('the allow-list lets a named host reach any of its addresses, and a block be reached by any name', () => {
    expect(addressRefusal('JWKS.corp.example.', '10.99.0.1', allow)).toBeUndefined();
    expect(addressRefusal('other.example', '10.20.5.5', allow)).toBeUndefined();
    expect(addressRefusal('other.example', '::ffff:10.20.5.5', allow)).toBeUndefined();
    expect(addressRefusal('other.example', '127.0.0.1', allow)).toBeUndefined();
    expect(addressRefusal('other.example', '127.0.0.2', allow)).toBe('loopback address 127.0.0.2');
    expect(addressRefusal('other.example', '10.21.0.1', allow)).toBe('private address 10.21.0.1');
  });

  it('before anything is resolved, literal internal addresses and localhost names are refused', () => {
    const refused = (url: string, list = emptyAllowList) => literalTargetRefusal(new URL(url), list);
    expect(refused('http://127.0.0.1:8080/internal-admin/x')).toBe('loopback address 127.0.0.1');
    expect(refused('http://[::1]/x')).toBe('loopback address ::1');
    expect(refused('https://169.254.169.254/latest/meta-data/')).toBe('link-local address 169.254.169.254');
    expect(refused('https://[::ffff:10.0.0.1]/jwks')).toBe('private address ::ffff:a00:1');
    expect(refused('https://0x7f000001/jwks')).toBe('loopback address 127.0.0.1');
    expect(refused('http://localhost:9000/x')).toBe('localhost names this machine');
    expect(refused('https://admin.localhost/x')).toBe('admin.localhost names this machine');
    expect(refused('https://rp.example.com/jwks')).toBeUndefined();
    expect(refused('https://93.184.216.34/jwks')).toBeUndefined();
    expect(refused('http://127.0.0.1:8080/x', allow)).toBeUndefined();
    expect(refused('https://10.20.0.9/x', allow)).toBeUndefined();
    expect(refused('http://localhost/x', parseOutboundAllowList('localhost'))).toBeUndefined();
  });
});
