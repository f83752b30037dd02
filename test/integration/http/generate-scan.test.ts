/**
 * Large generate bodies (over 16 MiB) are scanned (ts/server/http/json-scan.ts scanGenerateJson):
 * each list under a top-level or `parameters` key is read straight into its tensor instead of
 * JSON.parse making a JS value per element (64 MiB of `0,` under one key: 2-3 s and ~1 GB). The
 * same request must get the same answer, or the same error, either way: each case is posted as
 * it is (JSON.parse) and with 16 MiB of leading spaces (the scan), over real HTTP.
 */
import { closeAgent, echo, post, serve, type Reply, type Served } from './http-helpers';

let s: Served;

beforeAll(async () => {
  s = await serve((t) => {
    t.bind({
      modelName: 'mixed', inferFunc: echo({ F: 'F', I: 'I', B: 'B', S: 'S', P: 'P' }),
      inputs: [
        { name: 'F', dtype: 'FP32', shape: [-1] }, { name: 'I', dtype: 'INT32', shape: [2, -1] },
        { name: 'B', dtype: 'BOOL', shape: [-1], optional: true }, { name: 'S', dtype: 'BYTES', shape: [-1], optional: true },
        { name: 'P', dtype: 'INT64', shape: [-1], optional: true },
      ],
      outputs: [
        { name: 'F', dtype: 'FP32', shape: [-1] }, { name: 'I', dtype: 'INT32', shape: [2, -1] },
        { name: 'B', dtype: 'BOOL', shape: [-1] }, { name: 'S', dtype: 'BYTES', shape: [-1] }, { name: 'P', dtype: 'INT64', shape: [-1] },
      ],
      config: { maxBatchSize: 8 },
    });
  });
});

afterAll(async () => {
  closeAgent();
  await s.triton.stop();
});

const SCANNED = 16 * 1024 * 1024 + 1;

/** Status and body of `body` posted to generate, as it is and padded past the scan's threshold. */
async function bothWays(body: string): Promise<{ parsed: [number, string]; scanned: [number, string] }> {
  const outcome = (r: Reply): [number, string] => [r.status, r.body.toString()];
  const parsed = outcome(await post(s.port, '/v2/models/mixed/generate', body, { 'Content-Type': 'application/json' }));
  const padded = Buffer.alloc(SCANNED + Buffer.byteLength(body), 0x20);
  padded.write(body, SCANNED);
  const scanned = outcome(await post(s.port, '/v2/models/mixed/generate', padded, { 'Content-Type': 'application/json' }));
  return { parsed, scanned };
}

test('lists of every kind give the same answer either way', async () => {
  const floats = Array.from({ length: 1000 }, (_, i) => (i * 0.7390851332151607) % 3 - 1.5);
  const body = JSON.stringify({
    F: floats, I: [1, -2, 3, 2147483647], B: [true, false, true], S: ['a', 'é\n"', ''], note: 'x', n: 3,
    parameters: { P: [-5, 9007199254740991], flag: true },
  });
  const { parsed, scanned } = await bothWays(body);
  expect(parsed[0]).toBe(200);
  const answer = JSON.parse(parsed[1]) as Record<string, unknown>;
  expect(answer.F).toEqual(Array.from(Float32Array.from(floats)));
  expect(answer.I).toEqual([1, -2, 3, 2147483647]);
  expect(answer.S).toEqual(['a', 'é\n"', '']);
  expect(answer.P).toEqual([-5, 9007199254740991]);
  expect(scanned).toEqual(parsed);
});

test("a client's string spelled like the scan's placeholder stays a string (it was another key's list)", async () => {
  // The scan stands a placeholder string in for each list it takes out; a string of the same
  // spelling under another key must not be taken for one.
  const body = '{"F":[1.5,2.5],"I":[1,2],"S":["\\u0000tensor-data:0"]}';
  const { parsed, scanned } = await bothWays(body);
  expect(parsed[0]).toBe(200);
  expect((JSON.parse(parsed[1]) as { S: unknown }).S).toBe('\u0000tensor-data:0');
  expect(scanned).toEqual(parsed);
  const asParameter = await bothWays('{"F":[1.5],"I":[1,2],"note":"\\u0000tensor-data:0","S":"\\u0000tensor-data:1"}');
  expect(asParameter.scanned).toEqual(asParameter.parsed);
});

test.each([
  ['a nested list', '{"F":[[1],[2]],"I":[1,2]}'],
  ['an object in a list', '{"F":[1,{"a":1}],"I":[1,2]}'],
  ['a string in a numeric list', '{"F":[1,"x"],"I":[1,2]}'],
  ['a count the fixed dimensions do not divide', '{"F":[1],"I":[1,2,3]}'],
  ['a list under a key that is no input', '{"F":[1],"I":[1,2],"other":[1,2,3]}'],
  ['a list as parameters', '{"F":[1],"I":[1,2],"parameters":[1,2]}'],
  ['a list under parameters that is no input', '{"F":[1],"I":[1,2],"parameters":{"q":[true]}}'],
  ['a list as the id', '{"id":[1],"F":[1],"I":[1,2]}'],
  ['an INT32 value out of range', '{"F":[1],"I":[1,2147483648]}'],
  ['a BOOL list of numbers', '{"F":[1],"I":[1,2],"B":[1,0]}'],
])('%s gets the same error either way', async (_, body) => {
  const { parsed, scanned } = await bothWays(body);
  expect(parsed[0]).toBe(400);
  expect(scanned).toEqual(parsed);
});
