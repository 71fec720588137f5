import {
  MAX_REQUESTS_PER_RUN,
  planTraffic,
  type HeaderStyle,
  type SimulationSettings,
  type Traffic,
} from './simulation.js';

/** A simulation request the sandbox refuses; the message names the field and what it accepts. */
export class InvalidSimulationSettings extends Error {
  override readonly name = 'InvalidSimulationSettings';
}

const HEADER_STYLES: readonly HeaderStyle[] = ['ietf', 'legacy', 'both'];
const MAX_LIMIT = MAX_REQUESTS_PER_RUN / 2; // the boundary exploit sends two quotas
const MIN_WINDOW_MS = 100;
const MAX_WINDOW_MS = 86_400_000;

/** Validates the JSON body of POST /sandbox/simulate, which comes straight from a browser. */
export function parseSimulationSettings(body: unknown): SimulationSettings {
  const input = asObject(body, 'body');
  const limit = integerIn(input.limit, 'limit', 1, MAX_LIMIT);
  const windowMs = integerIn(input.windowMs, 'windowMs', MIN_WINDOW_MS, MAX_WINDOW_MS);
  const burst =
    input.burst === undefined || input.burst === null
      ? limit
      : integerIn(input.burst, 'burst', 1, MAX_REQUESTS_PER_RUN);
  const headerStyle = input.headerStyle ?? 'ietf';
  if (!HEADER_STYLES.includes(headerStyle as HeaderStyle)) {
    throw new InvalidSimulationSettings(`headerStyle must be one of ${HEADER_STYLES.join(', ')}`);
  }
  const traffic = parseTraffic(input.traffic);
  const requests = planTraffic(traffic, limit, windowMs).arrivalsMs.length;
  if (requests > MAX_REQUESTS_PER_RUN) {
    throw new InvalidSimulationSettings(
      `that traffic is ${requests} requests; a run takes at most ${MAX_REQUESTS_PER_RUN}: lower the rate or the duration`,
    );
  }
  if (requests === 0) {
    throw new InvalidSimulationSettings(
      'that traffic sends no request: raise the rate or the duration',
    );
  }
  return { limit, windowMs, burst, traffic, headerStyle: headerStyle as HeaderStyle };
}

function parseTraffic(value: unknown): Traffic {
  const traffic = asObject(value, 'traffic');
  switch (traffic.pattern) {
    case 'burst':
    case 'boundary-exploit':
      return { pattern: traffic.pattern };
    case 'steady':
      return {
        pattern: 'steady',
        ratePerSecond: numberIn(traffic.ratePerSecond, 'traffic.ratePerSecond', 0.1, 50),
        durationSeconds: numberIn(traffic.durationSeconds, 'traffic.durationSeconds', 1, 600),
      };
    case 'login':
      return {
        pattern: 'login',
        ratePerSecond: numberIn(traffic.ratePerSecond, 'traffic.ratePerSecond', 0.1, 50),
        durationSeconds: numberIn(traffic.durationSeconds, 'traffic.durationSeconds', 1, 600),
        successPercent: numberIn(traffic.successPercent, 'traffic.successPercent', 0, 100),
      };
    default:
      throw new InvalidSimulationSettings(
        "traffic.pattern must be 'steady', 'burst', 'boundary-exploit' or 'login'",
      );
  }
}

function asObject(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidSimulationSettings(`${field} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

function numberIn(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new InvalidSimulationSettings(`${field} must be a number from ${min} to ${max}`);
  }
  return value;
}

function integerIn(value: unknown, field: string, min: number, max: number): number {
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw new InvalidSimulationSettings(`${field} must be a whole number from ${min} to ${max}`);
  }
  return value as number;
}
