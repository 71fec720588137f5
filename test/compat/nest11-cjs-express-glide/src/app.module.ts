import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';
import { AppController } from './app.controller.js';

const VALKEY = Symbol('VALKEY');

/** The app's own GLIDE client, made connected from REDIS_URL; closed by the app. */
@Module({
  providers: [
    {
      provide: VALKEY,
      useFactory: () => {
        const { hostname: host, port } = new URL(process.env.REDIS_URL!);
        return GlideClient.createClient({ addresses: [{ host, port: Number(port) }] });
      },
    },
  ],
  exports: [VALKEY],
})
class ValkeyModule implements OnApplicationShutdown {
  constructor(@Inject(VALKEY) private readonly client: GlideClient) {}
  onApplicationShutdown(): void {
    this.client.close();
  }
}

/** Types only: a Cluster client is accepted too. */
export const clusterOption = async () =>
  ({
    redis: await GlideClusterClient.createClient({
      addresses: [{ host: '127.0.0.1', port: 7000 }],
    }),
  }) satisfies RateLimitModuleOptions;

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      imports: [ValkeyModule],
      inject: [VALKEY],
      useFactory: (client: GlideClient) => ({ redis: client }),
    }),
  ],
  controllers: [AppController],
})
export class AppModule {}
