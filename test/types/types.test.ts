/**
 * The type tests (test/types/*.test-d.ts) compile under `tsc --strict`: the positive cases type
 * check, and every `@ts-expect-error` still meets its error (tsc reports an unused one). They
 * are compiled, never run: what they prove is what a user's compiler says.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

test('the type tests compile with tsc --strict (negative cases included)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'tsconfig.json'), '--pretty', 'false'], {
    cwd: ROOT, encoding: 'utf8',
  });
  // On failure the compiler's own lines say which case broke and why.
  expect(`${result.stdout}${result.stderr}`.trim()).toBe('');
  expect(result.status).toBe(0);
}, 180_000);
