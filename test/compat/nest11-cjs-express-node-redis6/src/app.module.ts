import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { RateLimitModule, type RateLimitModuleOptions } from 'nestjs-redis-rate-limiter';
import { createClient, createCluster, type RedisClientType } from 'redis';
import { AppController } from './app.controller.js';

const REDIS = Symbol('REDIS');

/** The app's own node-redis client, connected before the limiter gets it; closed by the app. */
@Module({
  providers: [
    {
      provide: REDIS,
      useFactory: async (): Promise<RedisClientType> => {
        const client: RedisClientType = createClient({ url: process.env.REDIS_URL });
        client.on('error', (error: Error) => console.error(`redis: ${error.message}`));
        await client.connect();
        return client;
      },
    },
  ],
  exports: [REDIS],
})
class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly client: RedisClientType) {}
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }
}

/** Types only: a Cluster client is accepted too. */
export const clusterOption = () =>
  ({
    redis: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }),
  }) satisfies RateLimitModuleOptions;

@Module({
  imports: [
    RateLimitModule.forRootAsync({
      imports: [RedisModule],
      inject: [REDIS],
      useFactory: (client: RedisClientType) => ({ redis: client }),
    }),
  ],
  controllers: [AppController],
})
export class AppModule {}
