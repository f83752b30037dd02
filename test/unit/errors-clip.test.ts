/**
 * Client text in error messages (ts/errors.ts clip, clipShape, boundMessage) and the gRPC status
 * bound (call-status.ts statusDetails): bounded whatever the input, never a broken character.
 */
import { MAX_ECHOED_CHARS, boundMessage, clip, clipShape } from '../../ts/errors';
import { statusDetails } from '../../ts/server/grpc/call-status';

test('clip keeps short text and cuts long text with its length', () => {
  expect(clip('model')).toBe('model');
  expect(clip('m'.repeat(1000))).toBe(`${'m'.repeat(MAX_ECHOED_CHARS)}… (1000 characters)`);
  expect(clip(`a${'😀'.repeat(10)}`, 2)).toBe('a… (21 characters)');  // no half of a surrogate pair
});

test('clipShape prints small shapes whole and huge ones by their head and dim count', () => {
  expect(clipShape([2, 3])).toBe('[2,3]');
  expect(clipShape([])).toBe('[]');
  const huge = clipShape(new Array(1_000_000).fill(1));
  expect(huge.length).toBeLessThan(300);
  expect(huge).toMatch(/^\[1,1,(1,)*1,…\] \(1000000 dims\)$/);
});

test('boundMessage keeps head and tail; statusDetails fits 4096 bytes once percent-encoded', () => {
  const message = `head ${'x'.repeat(10_000)} tail`;
  const bounded = boundMessage(message, 100);
  expect(bounded.length).toBeLessThanOrEqual(100);
  expect(bounded).toMatch(/^head x+…x+ tail$/);
  expect(statusDetails('short')).toBe('short');
  for (const filler of ['x', 'é', '…', '😀']) {
    const details = statusDetails(`start ${filler.repeat(100_000)} end`);
    expect(encodeURI(details).length).toBeLessThanOrEqual(4096);
    expect(details).toMatch(/^start .*… *.* end$/su);
  }
  expect(() => encodeURI(statusDetails(`\uD800${'x'.repeat(10_000)}`))).not.toThrow();
});
