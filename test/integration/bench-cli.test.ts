/**
 * `npm run bench -- <scenario>`: a scenario name that does not exist is refused with the list of
 * valid ones (a typo used to run nothing and exit 0). The scenarios themselves are measured by
 * `npm run bench`, never asserted here.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { ensureLib, LIB } from './lib-build';

beforeAll(() => ensureLib());

test('an unknown scenario exits 2 naming it and listing the valid ones', () => {
  const run = spawnSync(process.execPath, [path.join(LIB, 'bench', 'main.js'), 'onnx', 'onxx'], { encoding: 'utf8' });
  expect(run.status).toBe(2);
  expect(run.stderr).toContain("bench: unknown scenario 'onxx'; the scenarios are: inprocess, http, client, grpc, stream, cache, ensemble, gpu,");
  expect(run.stderr).toContain('onnx, onnx-large (none named: all of them)');
  expect(run.stdout).toBe('');
});
