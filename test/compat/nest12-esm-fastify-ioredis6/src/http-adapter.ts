import { FastifyAdapter } from '@nestjs/platform-fastify';

export const httpAdapter = () => new FastifyAdapter();
