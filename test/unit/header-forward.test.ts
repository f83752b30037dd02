/**
 * Header-forward patterns as tritonserver takes them (RE2, matched partially): the leading
 * inline flags Triton's docs use compile (JavaScript has none), mid-pattern inline flags and bad
 * syntax are INVALID_ARG naming the setting, never a crash at start-up.
 */
import { compileHeaderForwardPattern } from '../../ts/server/parameters';
import { errorOf } from './error-of';

const compile = (p: string): RegExp => compileHeaderForwardPattern(p, 'grpcHeaderForwardPattern')!;

test('matching is partial and case-insensitive by default', () => {
  expect(compile('x-fwd-').test('X-Fwd-User')).toBe(true);
  expect(compile('^x-fwd-').test('other-x-fwd-')).toBe(false);
  expect(compileHeaderForwardPattern('', 'grpcHeaderForwardPattern')).toBeNull();
});

test.each([
  ['(?i)^x-fwd-', 'X-FWD-A', true],
  ['(?-i)^x-fwd-', 'X-FWD-A', false],
  ['(?-i)^x-fwd-', 'x-fwd-a', true],
  ['(?is)^x-.fwd', 'X-\nFWD', true],
  ['(?i-s)^x-.fwd', 'x-\nfwd', false],
])('RE2 leading flags %s against %j: %s', (pattern, name, matches) => {
  expect(compile(pattern).test(name)).toBe(matches);
});

test.each([
  ['(', 'Invalid regular expression'],
  ['x(?i)y', 'inline flags are supported only at the start of the pattern'],
  ['(?i:x)', 'inline flags are supported only at the start of the pattern'],
  ['(?U)x+', "RE2's non-greedy flag (?U) has no JavaScript equivalent"],
])('%j is INVALID_ARG naming the setting', (pattern, why) => {
  const err = errorOf(() => compile(pattern));
  expect(err.code).toBe('INVALID_ARG');
  expect(err.message).toContain(`grpcHeaderForwardPattern '${pattern}' is not a valid regular expression`);
  expect(err.message).toContain(why);
});
