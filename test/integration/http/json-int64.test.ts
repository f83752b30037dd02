/**
 * 64-bit integers in JSON tensor data are read exactly, as Triton reads them: INT64 and UINT64
 * values beyond 2^53 reach the model and come back digit for digit; values outside the type's
 * range are refused; long literals elsewhere (FP64 data, parameters) keep JSON's double value;
 * digits inside strings are untouched.
 */
import { bindInferModels } from './models';
import { serve, type Served } from './http-helpers';

let s: Served;

beforeAll(async () => {
  s = await serve(bindInferModels);
});

afterAll(async () => {
  await s.triton.stop();
});

/** Posts a JSON body given as text (so its number literals stay as written) and returns status and text. */
async function postText(model: string, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`http://127.0.0.1:${s.port}/v2/models/${model}/infer`, { method: 'POST', body });
  return { status: r.status, text: await r.text() };
}

const request = (datatype: string, data: string, extra = ''): string =>
  `{"inputs":[{"name":"IN","datatype":"${datatype}","shape":[1,${data.split(',').length}],"data":[${data}]}]${extra}}`;

test.each([
  ['INT64', '9223372036854775807,-9223372036854775808,9007199254740993,-1'],
  ['UINT64', '18446744073709551615,9007199254740993,0'],
])('%s values beyond 2^53 travel exactly, both ways', async (datatype, data) => {
  const r = await postText(`echo_${datatype}`, request(datatype, data));
  expect(r.status).toBe(200);
  expect(r.text).toContain(`"data":[${data}]`);
});

test.each([
  ['INT64', '9223372036854775808', 'element 0 (9223372036854775808) is out of range for datatype INT64'],
  ['UINT64', '18446744073709551616', 'element 0 (18446744073709551616) is out of range for datatype UINT64'],
  ['UINT64', '-12345678901234567', 'is out of range for datatype UINT64'],
  // Below 16 digits (not read as marks): a BigUint64Array stored -1n as 2^64 - 1, a huge value.
  ['UINT64', '-1', 'element 0 (-1) is out of range for datatype UINT64'],
  ['UINT64', '-999999999999999', 'element 0 (-999999999999999) is out of range for datatype UINT64'],
])('%s %s is refused as out of range', async (datatype, data, message) => {
  const r = await postText(`echo_${datatype}`, request(datatype, data));
  expect(r.status).toBe(400);
  expect(JSON.parse(r.text).error).toContain(message);
});

test('long literals elsewhere keep their JSON value; strings keep their digits', async () => {
  const fp = await postText('echo_FP64', request('FP64', '12345678901234567890,1.5', ',"parameters":{"k":12345678901234567890}'));
  expect(fp.status).toBe(200);
  expect(fp.text).toContain('"data":[12345678901234567000,1.5]');
  const bytes = await postText('echo_BYTES', '{"inputs":[{"name":"IN","datatype":"BYTES","shape":[1,1],"data":["12345678901234567890"]}]}');
  expect(bytes.status).toBe(200);
  expect(bytes.text).toContain('"data":["12345678901234567890"]');
  const wrong = await postText('echo_BYTES', request('BYTES', '12345678901234567890'));
  expect(wrong.status).toBe(400);
  expect(JSON.parse(wrong.text).error).toContain('element 0 is 12345678901234567000, expected a string for BYTES');
});

test('a literal of millions of digits is refused at once with a short error, not read exactly', async () => {
  // No 64-bit value has more than 20 digits. Read as a BigInt, 4M digits took ~3 s (and the
  // error echoed them all); from ~6M digits the marking regex overflowed its stack and the
  // request got "Maximum call stack size exceeded"; a shared-memory offset went the same way.
  const digits = '9'.repeat(8_000_000);
  const started = performance.now();
  const r = await postText('echo_INT64', request('INT64', `1,${digits}`));
  const shm = await postText('echo_INT64', `{"inputs":[{"name":"IN","datatype":"INT64","shape":[1,1],` +
    `"parameters":{"shared_memory_region":"r","shared_memory_byte_size":8,"shared_memory_offset":${digits}}}]}`);
  const elapsed = performance.now() - started;
  expect({ status: r.status, error: JSON.parse(r.text).error })
    .toEqual({ status: 400, error: "input 'IN' for model 'echo_INT64': element 1 (Infinity) is not an exact integer for datatype INT64" });
  expect(shm.status).toBe(400);
  expect(shm.text.length).toBeLessThan(400);
  expect(JSON.parse(shm.text).error).toContain('shared_memory_offset must be a non-negative integer below 2^64, got Infinity');
  // 16 MB of digits take well under a second to scan here; exactly, the first alone took ~3 s.
  expect(elapsed).toBeLessThan(10_000);
});

describe('marks are taken back in one step per JSON value, whatever the nesting', () => {
  // A long literal anywhere makes the parser mark it and walk the parsed header to take marks
  // back outside tensor data; that walk copied the path at every value and recursed per level.
  const withUnusedField = (field: string): string =>
    `{"inputs":[{"name":"IN","datatype":"FP64","shape":[1,1],"data":[1.5]}],"parameters":{"k":12345678901234567890},"unused":${field}}`;

  // 60,000 deep: past 65,536 arrays outside tensor data a body is refused (ts/json-bounds.ts, hostile.test.ts).
  test('a field nested 60,000 deep is ignored, as Triton ignores fields it does not know', async () => {
    const r = await postText('echo_FP64', withUnusedField('['.repeat(60_000) + ']'.repeat(60_000)));
    expect(r.status).toBe(200);
    expect(r.text).toContain('"data":[1.5]');
  });

  test('a 2 MB body of zeros nested 2,000 deep is answered in a moment, not after seconds of event-loop time', async () => {
    const field = '['.repeat(2_000) + new Array(1_000_000).fill(0).join(',') + ']'.repeat(2_000);
    const started = Date.now();
    const r = await postText('echo_FP64', withUnusedField(field));
    const ms = Date.now() - started;
    expect(r.status).toBe(200);
    // ~0.3 s here; the walk that copied the path at every value took ~17 s for this body.
    expect(ms).toBeLessThan(8_000);
  }, 60_000);
});

describe('priority and timeout take the whole uint64 range, as Triton', () => {
  test.each(['priority', 'timeout'])('%s 2^64 - 1 is served (the default level; no timeout in any lifetime)', async (key) => {
    const r = await postText('echo_FP64', request('FP64', '1.5', `,"parameters":{"${key}":18446744073709551615}`));
    expect({ key, status: r.status, text: r.text }).toEqual({ key, status: 200, text: expect.stringContaining('"data":[1.5]') });
  });

  test.each(['priority', 'timeout'])('%s beyond 2^64, negative or fractional is refused', async (key) => {
    for (const value of ['36893488147419103232', '-1', '1.5']) {
      const r = await postText('echo_FP64', request('FP64', '1.5', `,"parameters":{"${key}":${value}}`));
      expect({ value, status: r.status }).toEqual({ value, status: 400 });
      expect(JSON.parse(r.text).error).toContain(`parameter '${key}' must be a non-negative integer below 2^64`);
    }
  });
});
