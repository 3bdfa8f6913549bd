/**
 * What kind of address an IP address is, after the IANA special-purpose address registries
 * (RFC 6890): anything but `public` is a host of this machine, of a network behind it, or no host
 * at all, and is not where a request made for an outside party belongs. IPv6 forms that carry an
 * IPv4 address — mapped (RFC 4291 §2.5.5.2), translated (RFC 2765 §2.1), NAT64 (RFC 6052 §2.1),
 * 6to4 (RFC 3056 §2) — are judged by the IPv4 address they lead to.
 */
import { inCidr, isMappedIpv4, mappedIpv4, parseCidr, parseIp, type CidrBlock, type IpBytes } from './ip_address.js';

export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'shared' | 'unspecified' | 'multicast' | 'reserved';

/** A block written in this file: a typo fails when the module loads, not as a silent miss. */
function cidr(text: string): CidrBlock {
  const block = parseCidr(text);
  if (block === undefined) throw new Error(`not a CIDR block: ${text}`);
  return block;
}

function blocks(table: [string, AddressClass][]): [CidrBlock, AddressClass][] {
  return table.map(([text, kind]) => [cidr(text), kind]);
}

/** Checked in order: the first block holding the address names its class. */
const specialBlocks = blocks([
  // IPv4 (RFC 6890 §2.2.2 and later additions)
  ['0.0.0.0/8', 'unspecified'], // "this network" (RFC 1122 §3.2.1.3): 0.0.0.0 reaches this host on Linux
  ['10.0.0.0/8', 'private'], // RFC 1918
  ['100.64.0.0/10', 'shared'], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0/8', 'loopback'], // RFC 1122 §3.2.1.3
  ['169.254.0.0/16', 'link-local'], // RFC 3927; also the cloud metadata address 169.254.169.254
  ['172.16.0.0/12', 'private'], // RFC 1918
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments (RFC 6890 §2.2.2)
  ['192.0.2.0/24', 'reserved'], // documentation (RFC 5737)
  ['192.88.99.0/24', 'reserved'], // 6to4 relay anycast (RFC 7526)
  ['192.168.0.0/16', 'private'], // RFC 1918
  ['198.18.0.0/15', 'reserved'], // benchmarking (RFC 2544)
  ['198.51.100.0/24', 'reserved'], // documentation (RFC 5737)
  ['203.0.113.0/24', 'reserved'], // documentation (RFC 5737)
  ['224.0.0.0/4', 'multicast'], // RFC 5771
  ['240.0.0.0/4', 'reserved'], // future use (RFC 1112 §4), and the broadcast address 255.255.255.255
  // IPv6 (RFC 6890 §2.2.3 and later additions)
  ['::/128', 'unspecified'], // RFC 4291 §2.5.2
  ['::1/128', 'loopback'], // RFC 4291 §2.5.3
  ['::/96', 'reserved'], // IPv4-compatible, deprecated (RFC 4291 §2.5.5.1)
  ['64:ff9b:1::/48', 'private'], // local-use NAT64 (RFC 8215)
  ['100::/64', 'reserved'], // discard-only (RFC 6666)
  ['2001::/23', 'reserved'], // IETF protocol assignments: Teredo, benchmarking, ORCHID (RFC 2928)
  ['2001:db8::/32', 'reserved'], // documentation (RFC 3849)
  ['3fff::/20', 'reserved'], // documentation (RFC 9637)
  ['fc00::/7', 'private'], // unique local (RFC 4193)
  ['fe80::/10', 'link-local'], // RFC 4291 §2.5.6
  ['fec0::/10', 'private'], // site-local, deprecated (RFC 3879)
  ['ff00::/8', 'multicast'], // RFC 4291 §2.7
]);

const translated = cidr('::ffff:0:0:0/96');
const nat64 = cidr('64:ff9b::/96');
const sixToFour = cidr('2002::/16');

/** The IPv4 address in the four bytes of a (16-byte) IPv6 address from `at`, as a mapped address. */
const ipv4At = (address: IpBytes, at: number): IpBytes => mappedIpv4(address[at] ?? 0, address[at + 1] ?? 0, address[at + 2] ?? 0, address[at + 3] ?? 0);

/** The IPv4 address an IPv6 address stands for (other than by mapping), when it carries one. */
function embeddedIpv4(address: IpBytes): IpBytes | undefined {
  if (inCidr(address, translated) || inCidr(address, nat64)) return ipv4At(address, 12);
  if (inCidr(address, sixToFour)) return ipv4At(address, 2);
  return undefined;
}

/** The class of an address (as parsed by parseIp). */
export function classOfBytes(address: IpBytes): AddressClass {
  const inner = isMappedIpv4(address) ? undefined : embeddedIpv4(address);
  const judged = inner ?? address;
  for (const [block, kind] of specialBlocks) if (inCidr(judged, block)) return kind;
  return 'public';
}

/** The class of an address written as text; undefined when the text is no IP address. */
export function addressClass(text: string): AddressClass | undefined {
  const bytes = parseIp(text);
  return bytes === undefined ? undefined : classOfBytes(bytes);
}
