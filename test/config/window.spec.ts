import { parseWindow } from '../../lib/config/window.js';

describe('parseWindow', () => {
  it.each([
    [1_000, 1_000],
    ['250ms', 250],
    ['10s', 10_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5m', 90_000],
    ['1.25s', 1_250],
    [' 10s ', 10_000],
  ])('%p is %p ms', (input, ms) => expect(parseWindow(input)).toBe(ms));

  it.each([0, -5, Infinity, NaN, '', '10', '10 minutes', 'ms', '-1s', '1w', null, {}])(
    'rejects %p',
    (input) => expect(parseWindow(input)).toBeUndefined(),
  );
});
