import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RateLimitModuleOptions } from './interfaces/rate-limit-options.interface.js';

export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN, OPTIONS_TYPE, ASYNC_OPTIONS_TYPE } =
  new ConfigurableModuleBuilder<RateLimitModuleOptions>()
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRateLimitOptions')
    .setExtras({}, (definition) => ({ ...definition, global: true }))
    .build();

/** For `forRootAsync({ useClass })`: a provider that produces the options. */
export interface RateLimitOptionsFactory {
  createRateLimitOptions(): RateLimitModuleOptions | Promise<RateLimitModuleOptions>;
}
