// Callback URL checks with a fixed resolver: the allow-list (exact and *.domain), every resolved
// address checked against the refused ranges (IPv4, IPv6, IPv4-mapped), exact listing allowing a
// private receiver; and the signature's round trip.
import { describe, expect, it } from 'vitest';
import { refusedRange } from '../../../src/callbacks/address.js';
import { addressRefusal, checkCallbackUrl, type Lookup } from '../../../src/callbacks/allow.js';
import { signatureHeader, verifySignature } from '../../../src/callbacks/sign.js';

const dns: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'a.example.com': ['93.184.216.34', '10.0.0.5'],
  'meta.example.com': ['169.254.169.254'],
  'v6.example.com': ['2606:2800:220:1::1', 'fe80::1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'internal.corp': ['192.168.1.10'],
};
const lookup: Lookup = async (host) => {
  const found = dns[host];
  if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};
const allow = { hosts: ['*.example.com', 'internal.corp', '10.1.2.3'] };

describe('refusedRange', () => {
  it('names the range of refused addresses and passes public ones', () => {
    expect(['127.0.0.1', '10.9.9.9', '172.31.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1'].map(refusedRange)).toEqual([
      'loopback', 'private', 'private', 'private', 'link-local', 'shared (CGNAT)', 'unspecified', 'multicast or reserved', 'loopback', 'private', 'link-local', 'private',
    ]);
    expect(['93.184.216.34', '172.32.0.1', '2606:2800:220:1::1'].map(refusedRange)).toEqual([undefined, undefined, undefined]);
  });
});

describe('checkCallbackUrl', () => {
  it('accepts an allowed host that resolves to public addresses only', async () => {
    expect(await checkCallbackUrl('https://hooks.example.com/h?x=1', allow, lookup)).toEqual({ ok: true, url: 'https://hooks.example.com/h?x=1', privateAllowed: false });
  });
  it('refuses when any resolved address is private, link-local, or loopback (IPv4-mapped too)', async () => {
    expect(await checkCallbackUrl('https://a.example.com/', allow, lookup)).toEqual({ ok: false, message: "host 'a.example.com' resolves to 10.0.0.5, a private address (list the host exactly in callbacks.allow to allow it)" });
    expect(await checkCallbackUrl('https://meta.example.com/', allow, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('169.254.169.254, a link-local address') });
    expect(await checkCallbackUrl('https://v6.example.com/', allow, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('fe80::1, a link-local address') });
    expect(await checkCallbackUrl('https://mapped.example.com/', allow, lookup)).toMatchObject({ ok: false, message: expect.stringContaining('::ffff:127.0.0.1, a loopback address') });
  });
  it('a host listed exactly may be private; a wildcard does not match the bare domain', async () => {
    expect(await checkCallbackUrl('http://internal.corp/h', allow, lookup)).toEqual({ ok: true, url: 'http://internal.corp/h', privateAllowed: true });
    expect(await checkCallbackUrl('http://10.1.2.3:8080/h', allow, lookup)).toEqual({ ok: true, url: 'http://10.1.2.3:8080/h', privateAllowed: true });
    expect(await checkCallbackUrl('https://example.com/', allow, lookup)).toEqual({ ok: false, message: "host 'example.com' is not in the rules' callbacks.allow list" });
  });
  it('refuses other schemes, credentials, unknown hosts, and everything without an allow-list', async () => {
    expect(await checkCallbackUrl('file:///etc/passwd', allow, lookup)).toEqual({ ok: false, message: 'must be http or https, not file' });
    expect(await checkCallbackUrl('https://u:p@hooks.example.com/', allow, lookup)).toEqual({ ok: false, message: 'must not carry credentials' });
    expect(await checkCallbackUrl('https://nx.example.com/', allow, lookup)).toEqual({ ok: false, message: "host 'nx.example.com' does not resolve (ENOTFOUND)" });
    expect(await checkCallbackUrl('https://hooks.example.com/', undefined, lookup)).toEqual({ ok: false, message: 'callbacks are not enabled: the rules file has no callbacks.allow list' });
  });
  it('the delivery-time check refuses a name that now resolves privately', async () => {
    expect(await addressRefusal('hooks.example.com', false, async () => ['127.0.0.1'])).toBe("host 'hooks.example.com' resolves to 127.0.0.1, a loopback address (list the host exactly in callbacks.allow to allow it)");
  });
});

describe('signature', () => {
  it('is HMAC-SHA256 over `t.body`, verified with a 300 s tolerance', () => {
    const header = signatureHeader('s3cret', '{"a":1}', 1_700_000_000);
    // The same as: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac s3cret
    expect(header).toBe('t=1700000000,v1=1698a50bc74d1ff1db85c4e0a5297c2ad9fdba245d5737cdb789e4cc6e098940');
    expect(verifySignature('s3cret', '{"a":1}', header, 1_700_000_000)).toBe(true);
    expect(verifySignature('s3cret', '{"a":1}', header, 1_700_000_301)).toBe(false);
    expect(verifySignature('s3cret', '{"a":2}', header, 1_700_000_000)).toBe(false);
    expect(verifySignature('other', '{"a":1}', header, 1_700_000_000)).toBe(false);
  });
});
