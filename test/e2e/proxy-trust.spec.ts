import { Controller, Get, type INestApplication } from '@nestjs/common';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { RateLimit, RateLimitModule, type RateLimitModuleOptions } from '../../lib/index.js';
import { byClientHeader, RecordingLogger } from '../support/test-app.js';

@Controller()
class ProxyController {
  @Get('limited')
  @RateLimit({ limit: 2, window: '1m' })
  limited() {
    return 'ok';
  }
}

type Adapter = 'express' | 'fastify';

interface ProxiedApp {
  /** A GET of /limited with these headers. */
  get(headers?: Record<string, string>): Promise<number>;
  /** The warnings of the module about the adapter's trust-proxy setting. */
  proxyWarnings(): string[];
  close(): Promise<void>;
}

/**
 * An app on the embedded store (no Redis needed: the warnings are about the client address)
 * with the adapter's trust-proxy setting as given: Express' 'trust proxy', Fastify's trustProxy.
 */
async function start(
  adapter: Adapter,
  trustProxy: unknown,
  options: RateLimitModuleOptions = {},
): Promise<ProxiedApp> {
  const logger = new RecordingLogger();
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options)],
    controllers: [ProxyController],
  })
    .setLogger(logger)
    .compile();
  let app: INestApplication;
  if (adapter === 'fastify') {
    const fastify = new FastifyAdapter(
      trustProxy === undefined ? {} : { trustProxy: trustProxy as boolean },
    );
    app = moduleRef.createNestApplication<NestFastifyApplication>(fastify);
  } else {
    app = moduleRef.createNestApplication();
    if (trustProxy !== undefined) app.getHttpAdapter().getInstance().set('trust proxy', trustProxy);
  }
  app.useLogger(logger);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return {
    get: async (headers = {}) => (await fetch(`${url}/limited`, { headers })).status,
    proxyWarnings: () => logger.warnings.filter((line) => /proxy|proxies/i.test(line)),
    close: () => app.close(),
  };
}

async function withApp(
  starting: Promise<ProxiedApp>,
  body: (app: ProxiedApp) => Promise<void>,
): Promise<void> {
  const app = await starting;
  try {
    await body(app);
  } finally {
    await app.close();
  }
}

const ADAPTERS: Adapter[] = ['express', 'fastify'];

describe.each(ADAPTERS)('trust-proxy warnings on %s', (adapter) => {
  it('warns once when X-Forwarded-For arrives while no proxy is trusted, at the first request that shows it', async () => {
    await withApp(start(adapter, undefined), async (app) => {
      await app.get();
      await app.get({ forwarded: 'for=198.51.100.1' });
      expect(app.proxyWarnings()).toHaveLength(1);
      expect(app.proxyWarnings()[0]).toMatch(
        /A request came with Forwarded while the HTTP adapter trusts no proxy/,
      );
      await app.get({ 'x-forwarded-for': '198.51.100.2' });
      expect(app.proxyWarnings()).toHaveLength(1);
    });
  });

  it('names X-Forwarded-For and how to trust a proxy on this adapter', async () => {
    await withApp(start(adapter, false), async (app) => {
      expect(await app.get()).toBe(200);
      expect(app.proxyWarnings()).toEqual([]);
      await app.get({ 'x-forwarded-for': '198.51.100.1' });
      await app.get({ 'x-forwarded-for': '198.51.100.1' });
      expect(app.proxyWarnings()).toHaveLength(1);
      expect(app.proxyWarnings()[0]).toMatch(/came with X-Forwarded-For .* trusts no proxy/);
      expect(app.proxyWarnings()[0]).toContain(
        adapter === 'express' ? "app.set('trust proxy'" : 'new FastifyAdapter({ trustProxy',
      );
    });
  });

  it('warns once at the first request when every hop is trusted', async () => {
    await withApp(start(adapter, true), async (app) => {
      for (let i = 0; i < 3; i++) await app.get({ 'x-forwarded-for': `198.51.100.${i}` });
      expect(app.proxyWarnings()).toHaveLength(1);
      expect(app.proxyWarnings()[0]).toMatch(/trusts every proxy \(trust proxy: true\)/);
    });
  });

  it('warns nothing where the proxy is trusted by address, forwarding headers or not', async () => {
    await withApp(start(adapter, '127.0.0.1'), async (app) => {
      await app.get();
      await app.get({ 'x-forwarded-for': '198.51.100.1' });
      await app.get({ forwarded: 'for=198.51.100.1' });
      expect(app.proxyWarnings()).toEqual([]);
    });
  });

  it('warns nothing without forwarding headers where no proxy is trusted', async () => {
    await withApp(start(adapter, undefined), async (app) => {
      expect([await app.get(), await app.get(), await app.get()]).toEqual([200, 200, 429]);
      expect(app.proxyWarnings()).toEqual([]);
    });
  });

  it("checks nothing with a keyBy of the app's own: the client address is not the key", async () => {
    await withApp(start(adapter, true, { keyBy: byClientHeader }), async (app) => {
      await app.get({ 'x-client': 'a', 'x-forwarded-for': '198.51.100.1' });
      expect(app.proxyWarnings()).toEqual([]);
    });
  });

  it('keys IPv6 clients by the ipv6Subnet option: two /64s of one /48 share a budget', async () => {
    await withApp(start(adapter, '127.0.0.1', { ipv6Subnet: 48 }), async (app) => {
      const from = (ip: string) => app.get({ 'x-forwarded-for': ip });
      expect(await from('2001:db8:abcd:1::1')).toBe(200);
      expect(await from('2001:db8:abcd:2::1')).toBe(200);
      expect(await from('2001:db8:abcd:ffff::9')).toBe(429);
      // Another /48 is another client.
      expect(await from('2001:db8:abce::1')).toBe(200);
    });
  });
});

it('keys IPv6 clients by their /64 by default', async () => {
  await withApp(start('express', '127.0.0.1'), async (app) => {
    const from = (ip: string) => app.get({ 'x-forwarded-for': ip });
    expect(await from('2001:db8:abcd:1::1')).toBe(200);
    expect(await from('2001:db8:abcd:1::2')).toBe(200);
    expect(await from('2001:db8:abcd:2::1')).toBe(200);
    expect(await from('2001:db8:abcd:1:ffff::')).toBe(429);
  });
});
