import { Module } from '@nestjs/common';
import { SandboxLiveController } from './sandbox-live.controller.js';
import { SandboxController } from './sandbox.controller.js';

/**
 * The interactive sandbox at /sandbox. Needs `RateLimitModule.forRoot(...)` in the app: every
 * decision it shows comes from the module's `RateLimiter` and global guard.
 */
@Module({ controllers: [SandboxController, SandboxLiveController] })
export class SandboxModule {}
