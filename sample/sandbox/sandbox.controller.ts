import {
  BadRequestException,
  Body,
  Controller,
  Get,
  Header,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Req,
  StreamableFile,
} from '@nestjs/common';
import {
  RATE_LIMIT_OPTIONS,
  RATE_LIMIT_REDIS,
  RateLimiter,
  SkipRateLimit,
  type Algorithm,
  type ResolvedRateLimitOptions,
} from '../../lib/index.js';
import { LIVE_POLICY } from './sandbox-live.controller.js';
import { loadSandboxAssets } from './sandbox-assets.js';
import { InvalidSimulationSettings, parseSimulationSettings } from './simulation-settings.js';
import {
  InvalidPodsSettings,
  parsePodsSettings,
  type PodsRun,
  runPods,
} from './pods-simulation.js';
import {
  ALGORITHMS,
  BURST_SIZE,
  BUSIEST_SPAN_MS,
  runSimulation,
  type HeaderStyle,
  type SimulationRun,
} from './simulation.js';

/** What the page needs to know about the server before it runs anything. */
export interface SandboxConfig {
  /** Who makes the decisions: the Lua scripts on Redis, or the embedded in-process store. */
  store: 'redis' | 'embedded';
  /** The style this app's clients receive, preselected so the page shows what they would see. */
  headerStyle: HeaderStyle;
  algorithms: readonly Algorithm[];
  /** How many requests the burst button sends. */
  burstSize: number;
  busiestSpanMs: number;
  live: { name: string; limit: number; window: string };
  /** Whether the limiter records metrics, which the sample then serves at /metrics (METRICS=1). */
  metrics: boolean;
}

/** The sandbox page, its assets and the simulation API; none of them is rate limited. */
@Controller('sandbox')
@SkipRateLimit()
export class SandboxController {
  private readonly assets = loadSandboxAssets();
  private readonly config: SandboxConfig;

  constructor(
    private readonly limiter: RateLimiter,
    @Inject(RATE_LIMIT_OPTIONS) options: ResolvedRateLimitOptions,
    /** The module's ioredis client, or null when it runs on the embedded store. */
    @Inject(RATE_LIMIT_REDIS) redis: unknown,
  ) {
    this.config = {
      store: redis ? 'redis' : 'embedded',
      headerStyle: options.headers === 'none' ? 'ietf' : options.headers,
      algorithms: ALGORITHMS,
      burstSize: BURST_SIZE,
      busiestSpanMs: BUSIEST_SPAN_MS,
      live: { name: LIVE_POLICY.name, limit: LIVE_POLICY.limit, window: LIVE_POLICY.window },
      metrics: options.metrics !== undefined,
    };
  }

  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-cache')
  page(@Req() request: { url: string; originalUrl?: string }): string {
    const path = (request.originalUrl ?? request.url).split('?')[0];
    return this.assets.page(path.endsWith('/') ? path : `${path}/`);
  }

  @Get('config')
  getConfig(): SandboxConfig {
    return this.config;
  }

  @Post('simulate')
  @HttpCode(200)
  async simulate(@Body() body: unknown): Promise<SimulationRun> {
    try {
      return await runSimulation(this.limiter, parseSimulationSettings(body));
    } catch (error) {
      if (error instanceof InvalidSimulationSettings) throw new BadRequestException(error.message);
      throw error;
    }
  }

  /** The "pods" view: one client's requests over several pods, exact and leased. */
  @Post('pods')
  @HttpCode(200)
  async pods(@Body() body: unknown): Promise<PodsRun> {
    try {
      return await runPods(this.limiter, parsePodsSettings(body));
    } catch (error) {
      if (error instanceof InvalidPodsSettings) throw new BadRequestException(error.message);
      throw error;
    }
  }

  /** The page's ES modules, stylesheet and icon; declared last so that `config` wins over it. */
  @Get(':file')
  @Header('Cache-Control', 'no-cache')
  file(@Param('file') name: string): StreamableFile {
    const file = this.assets.file(name);
    if (!file) throw new NotFoundException(`The sandbox has no file ${JSON.stringify(name)}`);
    return new StreamableFile(file.body, { type: file.contentType });
  }
}
