import type { ExecutionContext } from '@nestjs/common';
import { clientIp } from '../../lib/guard/client-ip.js';

/** The little of an ExecutionContext that clientIp reads, for one transport. */
const contextOf = (type: string, request: unknown, graphql?: unknown) =>
  ({
    getType: () => type,
    // As Nest's contexts: HTTP's arguments are (request, response, next), a resolver's third the GraphQL context.
    getArgByIndex: (index: number) =>
      (type === 'http' ? [request] : [undefined, undefined, graphql])[index],
    switchToWs: () => ({ getClient: () => request }),
    switchToRpc: () => ({ getContext: () => request }),
  }) as unknown as ExecutionContext;

describe('clientIp (the default keyBy)', () => {
  it.each([
    ['http', { ip: '::ffff:203.0.113.7', socket: { remoteAddress: '10.0.0.1' } }, '203.0.113.7'],
    ['http', { socket: { remoteAddress: '2001:db8::1' } }, '2001:db8:0:0::/64'],
    ['ws', { conn: { remoteAddress: '198.51.100.2' } }, '198.51.100.2'],
    ['rpc', { getSocketRef: () => ({ netSocket: { remoteAddress: '192.0.2.9' } }) }, '192.0.2.9'],
  ])('keys a %s client by its normalized address', (type, request, key) => {
    expect(clientIp(contextOf(type, request))).toBe(key);
  });

  it("keys a client without an address 'unknown' (a broker's message, say)", () => {
    expect(clientIp(contextOf('rpc', {}))).toBe('unknown');
    expect(clientIp(contextOf('telegraf', { ip: '192.0.2.1' }))).toBe('unknown');
  });
});
