import { ExpressAdapter } from '@nestjs/platform-express';

export const httpAdapter = () => new ExpressAdapter();
