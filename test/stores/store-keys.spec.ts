import { createHash } from 'node:crypto';
import { normalizeIp } from '../../lib/guard/client-ip.js';
import { clientTag, policyKey } from '../../lib/stores/store-keys.js';

describe('normalizeIp', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:abcd:12:1:2:3:4', '2001:db8:abcd:12::/64'],
    ['2001:db8:abcd:12::99', '2001:db8:abcd:12::/64'],
    ['2001:0db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['::ffff:cb00:7107', '203.0.113.7'],
    ['1::2:3:4:5:6.7.8.9', '1:0:2:3::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    // Not IPv4-mapped: the first five groups are not all zero.
    ['1::ffff:1.2.3.4', '1:0:0:0::/64'],
  ])('%s is keyed as %s', (ip, key) => expect(normalizeIp(ip)).toBe(key));

  it('puts two addresses of one /64 in one budget', () => {
    expect(normalizeIp('2001:db8::1')).toBe(normalizeIp('2001:db8::ffff:1'));
  });

  describe('at an ipv6Subnet of its own', () => {
    const address = '2001:db8:abcd:1234:5678:9abc:def0:1234';
    it.each([
      [32, '2001:db8::/32'],
      [33, '2001:db8:8000::/33'],
      [47, '2001:db8:abcc::/47'],
      [48, '2001:db8:abcd::/48'],
      [56, '2001:db8:abcd:1200::/56'],
      [63, '2001:db8:abcd:1234::/63'],
      [64, '2001:db8:abcd:1234::/64'],
      [65, '2001:db8:abcd:1234:0::/65'],
      [127, '2001:db8:abcd:1234:5678:9abc:def0:1234/127'],
      [128, '2001:db8:abcd:1234:5678:9abc:def0:1234/128'],
    ])('/%i keys %s', (subnet, key) => expect(normalizeIp(address, subnet)).toBe(key));

    it('masks the bits past the prefix inside a group: /33, /56, /127', () => {
      expect(normalizeIp('2001:db8:7fff::1', 33)).toBe('2001:db8:0::/33');
      expect(normalizeIp('2001:db8:ffff::1', 33)).toBe('2001:db8:8000::/33');
      expect(normalizeIp('2001:db8:abcd:12ff::', 56)).toBe('2001:db8:abcd:1200::/56');
      expect(normalizeIp('2001:db8::5', 127)).toBe('2001:db8:0:0:0:0:0:4/127');
    });

    it('puts addresses of one prefix in one budget and of the next prefix in another', () => {
      expect(normalizeIp('2001:db8:abcd:ff::1', 48)).toBe(normalizeIp('2001:db8:abcd::2', 48));
      expect(normalizeIp('2001:db8:abce::1', 48)).not.toBe(normalizeIp('2001:db8:abcd::1', 48));
      expect(normalizeIp('2001:db8::1', 128)).not.toBe(normalizeIp('2001:db8::2', 128));
      expect(normalizeIp('2001:db8::4', 127)).toBe(normalizeIp('2001:db8::5', 127));
    });

    it('keys IPv4 and IPv4-mapped IPv6 by the IPv4 address whatever the subnet', () => {
      expect(normalizeIp('::ffff:203.0.113.7', 48)).toBe('203.0.113.7');
      expect(normalizeIp('203.0.113.7', 128)).toBe('203.0.113.7');
    });

    it('gives keys that stay readable in the hash tag at every size', () => {
      for (let subnet = 32; subnet <= 128; subnet++) {
        const key = normalizeIp('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', subnet);
        expect(clientTag(key)).toBe(key);
        expect(key.length).toBeLessThanOrEqual(43);
      }
    });
  });
});

describe('clientTag', () => {
  it('keeps short, plain keys readable', () => {
    expect(clientTag('user:42')).toBe('user:42');
    expect(clientTag('203.0.113.7')).toBe('203.0.113.7');
  });

  it.each(['}{', 'a{b}c', 'new\nline', 'ü', 'x'.repeat(65), '', '#abc'])(
    'hashes %p into a bounded tag without braces',
    (key) => {
      const tag = clientTag(key);
      expect(tag).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    },
  );

  it('cannot be forged: a readable key never equals a hashed one', () => {
    const hashed = clientTag('victim\n');
    expect(clientTag(hashed)).not.toBe(hashed);
  });

  it('tells keys with lone surrogates apart, from each other and from well-formed keys', () => {
    // UTF-8 would read each lone surrogate as U+FFFD; the UTF-16 bytes of '\ud800\u0080'
    // are the UTF-8 bytes of '\u0000\u0600\u0000'.
    const keys = [
      '\ud800',
      '\udc00',
      '\ufffd',
      'a\ud800',
      'a\ufffd',
      '\ud800\u0080',
      '\u0000\u0600\u0000',
    ];
    const tags = keys.map(clientTag);
    expect(new Set(tags).size).toBe(keys.length);
    for (const tag of tags) expect(tag).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    // Well-formed keys keep the tag they always had, so stored budgets survive an upgrade.
    expect(clientTag('ü')).toBe('#' + createHash('sha256').update('ü').digest('base64url'));
  });

  it('builds keys with the tag in braces', () => {
    expect(policyKey('rl', clientTag('u1'), ':default:fw')).toBe('rl:{u1}:default:fw');
  });
});
