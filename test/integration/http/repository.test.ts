/**
 * The model repository extension over HTTP (index, load with config and file overrides,
 * unload) against a real repository of JS models in explicit control mode, classification with
 * labels from a label file, and the refusals when no repository is in use.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closeAgent, echo, get, post, serve, type Reply, type Served } from './http-helpers';
import { HttpInferenceServerClient } from '../../../ts/client/http';
import { ModelClient } from '../../../ts/client/model-client';

const MODEL_JS = `'use strict';
exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN }));
`;

function config(name: string, extra = ''): string {
  return `name: "${name}"\nbackend: "js"\nmax_batch_size: 4\n` +
    'input [ { name: "IN", data_type: TYPE_FP32, dims: [ 3 ] } ]\n' +
    `output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 3 ]${extra} } ]\n`;
}

const MAX_UINT64 = '18446744073709551615';

/**
 * The dynamic_batching of Triton's qa/L0_config_json/max_priority_level.pbtxt (uint64 max,
 * uint32 max, uint32 max + 1), with the other uint64 fields of the batcher at 2^64 - 1 too.
 */
const MAX_PRIORITY_BATCHING = `dynamic_batching:
{
    # Max uint64
    priority_levels: ${MAX_UINT64}
    # Max uint32
    default_priority_level: 4294967295
    preferred_batch_size: [ 1 ]
    max_queue_delay_microseconds: ${MAX_UINT64}
    default_queue_policy { default_timeout_microseconds: ${MAX_UINT64} }
    # Max uint32 + 1
    priority_queue_policy: [
       {key: 4294967296
        value: {
          timeout_action: REJECT
	  default_timeout_microseconds: ${MAX_UINT64}
	  allow_timeout_override: true
	  max_queue_size: 10
       }
    }
]
}
`;

let repo: string;
let s: Served;

beforeAll(async () => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'infernode-http-repo-'));
  for (const name of ['labeled', 'simple', 'max_priority_level']) {
    mkdirSync(path.join(repo, name, '1'), { recursive: true });
    writeFileSync(path.join(repo, name, '1', 'model.js'), MODEL_JS);
  }
  writeFileSync(path.join(repo, 'labeled', 'config.pbtxt'), config('labeled', ', label_filename: "labels.txt"'));
  writeFileSync(path.join(repo, 'labeled', 'labels.txt'), 'cat\ndog\nbird\n');
  writeFileSync(path.join(repo, 'simple', 'config.pbtxt'), config('simple'));
  writeFileSync(path.join(repo, 'max_priority_level', 'config.pbtxt'), config('max_priority_level') + MAX_PRIORITY_BATCHING);
  s = await serve((t) => {
    t.bind({
      modelName: 'bound', inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [3] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [3] }],
    });
    t.useRepository({ repositories: [repo], controlMode: 'explicit', loadModels: ['labeled'] });
  });
});

afterAll(async () => {
  await s.triton.stop();
  rmSync(repo, { recursive: true, force: true });
  closeAgent();
});

const input = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 3], data: [0.2, 0.9, 0.5] }] };
type Entry = { name: string; version: string; state: string; reason: string };

describe('index', () => {
  test('lists bound and repository models with their state', async () => {
    const r = await post(s.port, '/v2/repository/index');
    expect(r.status).toBe(200);
    const entries = r.json<Entry[]>();
    expect(entries).toEqual(expect.arrayContaining([
      { name: 'bound', version: '1', state: 'READY', reason: '' },
      { name: 'labeled', version: '1', state: 'READY', reason: '' },
      expect.objectContaining({ name: 'simple', state: 'UNAVAILABLE' }),
    ]));
    const ready = (await post(s.port, '/v2/repository/index', { ready: true })).json<Entry[]>();
    expect(ready.map((e) => e.name).sort()).toEqual(['bound', 'labeled']);
    expect((await post(s.port, '/v2/repository/default/index', {})).status).toBe(200);
  });

  test("a non-boolean 'ready' is refused", async () => {
    const r = await post(s.port, '/v2/repository/index', { ready: 'yes' });
    expect(r.status).toBe(400);
    expect(r.error).toContain("Invalid value for 'ready': expected a boolean");
  });
});

describe('load and unload', () => {
  test('load, infer, unload, and the model is gone', async () => {
    expect((await post(s.port, '/v2/repository/models/simple/load')).status).toBe(200);
    expect((await get(s.port, '/v2/models/simple/ready')).status).toBe(200);
    expect((await post(s.port, '/v2/models/simple/infer', input)).status).toBe(200);
    expect((await post(s.port, '/v2/repository/models/simple/unload', { parameters: { unload_dependents: false } })).status).toBe(200);
    expect((await get(s.port, '/v2/models/simple/ready')).status).toBe(400);
    const gone = await post(s.port, '/v2/models/simple/infer', input);
    expect(gone.status).toBe(404);
    expect(gone.error).toContain("'simple'");
  });

  test('a config override replaces the file config', async () => {
    const override = {
      name: 'simple', backend: 'js', max_batch_size: 2,
      input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [3] }], output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [3] }],
    };
    const r = await post(s.port, '/v2/repository/models/simple/load', { parameters: { config: JSON.stringify(override) } });
    expect(r.status).toBe(200);
    expect((await get(s.port, '/v2/models/simple/config')).json().max_batch_size).toBe(2);
    await post(s.port, '/v2/repository/models/simple/unload');
  });

  test('file: overrides (base64) with a config load a model sent by the client', async () => {
    const cfg = JSON.stringify({
      backend: 'js', max_batch_size: 4,
      input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [3] }], output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [3] }],
    });
    const doubled = `exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN.data.map((v) => v * 2) }));`;
    const r = await post(s.port, '/v2/repository/models/simple/load', {
      parameters: { config: cfg, 'file:1/model.js': Buffer.from(doubled).toString('base64') },
    });
    expect(r.status).toBe(200);
    const out = (await post(s.port, '/v2/models/simple/infer', input)).json().outputs as { data: number[] }[];
    expect(out[0].data.map((v) => Math.round(v * 10) / 10)).toEqual([0.4, 1.8, 1]);
    await post(s.port, '/v2/repository/models/simple/unload');
  });

  test.each([
    ['a file path escaping the model directory', { parameters: { config: '{}', 'file:1/../../evil.js': 'AAAA' } }, 400, 'must stay within model directory.'],
    ['file content that is not base64', { parameters: { config: '{}', 'file:1/model.js': 'not base64!' } }, 400, 'must be base64'],
    ['a config that is not a string', { parameters: { config: { backend: 'js' } } }, 400, "'config' must be a JSON string"],
    ['an unknown parameter', { parameters: { colour: 'red' } }, 400, "unknown parameter 'colour'"],
    ['parameters that are not an object', { parameters: 'config' }, 400, "'parameters' must be an object"],
    ['a body that is not JSON', '{oops', 400, 'failed to parse the request JSON buffer'],
  ])('load with %s is refused', async (_what, body, status, message) => {
    const r = await post(s.port, '/v2/repository/models/simple/load', body as object);
    expect(r.status).toBe(status);
    expect(r.error).toContain(message);
    expect((await get(s.port, '/v2/health/live')).status).toBe(200);
  });

  test('loading a model the repository does not have is 404', async () => {
    const r = await post(s.port, '/v2/repository/models/nothere/load');
    expect(r.status).toBe(404);
    expect(r.error).toContain("'nothere'");
  });

  test('unload with an unknown parameter is refused', async () => {
    const r = await post(s.port, '/v2/repository/models/simple/unload', { parameters: { force: true } });
    expect(r.status).toBe(400);
    expect(r.error).toContain("unknown parameter 'force'");
  });
});

describe('64-bit config fields, exact as in Triton (qa/L0_config_json max_priority_level)', () => {
  /** What L0_config_json greps in the /config body (and the batcher's other uint64 fields). */
  const EXPECTED = [
    `"priority_levels":${MAX_UINT64}`,
    '"default_priority_level":4294967295',
    `"4294967296":{"timeout_action":"REJECT","default_timeout_microseconds":${MAX_UINT64},"allow_timeout_override":true,"max_queue_size":10}`,
    `"max_queue_delay_microseconds":${MAX_UINT64}`,
    `"default_queue_policy":{"timeout_action":"REJECT","default_timeout_microseconds":${MAX_UINT64},`,
  ];

  test('a config.pbtxt with uint64 fields at 2^64 - 1 loads, serves every priority, and /config gives the exact values', async () => {
    expect((await post(s.port, '/v2/repository/models/max_priority_level/load')).status).toBe(200);
    try {
      const r = await get(s.port, '/v2/models/max_priority_level/config');
      expect(r.status).toBe(200);
      const body = r.body.toString('utf8');
      for (const text of EXPECTED) expect(body).toContain(text);
      for (const priority of [0, 1, 4294967295, 4294967296, Number.MAX_SAFE_INTEGER]) {
        const answer = await post(s.port, '/v2/models/max_priority_level/infer', { ...input, parameters: { priority } });
        expect({ priority, status: answer.status }).toEqual({ priority, status: 200 });
      }
    } finally {
      await post(s.port, '/v2/repository/models/max_priority_level/unload');
    }
  });

  test('a load request whose JSON config holds them as JSON numbers (or strings) is read exactly and served back', async () => {
    const batching = (v: string): string => `"dynamic_batching":{"priority_levels":${v},"default_priority_level":4294967295,` +
      `"preferred_batch_size":[1],"max_queue_delay_microseconds":${v},"default_queue_policy":{"default_timeout_microseconds":${v}},` +
      `"priority_queue_policy":{"4294967296":{"timeout_action":"REJECT","default_timeout_microseconds":${v},` +
      '"allow_timeout_override":true,"max_queue_size":10}}}';
    for (const value of [MAX_UINT64, `"${MAX_UINT64}"`]) {
      const cfg = `{"name":"simple","backend":"js","max_batch_size":4,"input":[{"name":"IN","data_type":"TYPE_FP32","dims":[3]}],` +
        `"output":[{"name":"OUT","data_type":"TYPE_FP32","dims":[3]}],${batching(value)}}`;
      const load = await post(s.port, '/v2/repository/models/simple/load', { parameters: { config: cfg } });
      expect({ value, status: load.status, error: load.error }).toEqual({ value, status: 200, error: '' });
      try {
        const body = (await get(s.port, '/v2/models/simple/config')).body.toString('utf8');
        for (const text of EXPECTED) expect(body).toContain(text);
        expect((await post(s.port, '/v2/models/simple/infer', { ...input, parameters: { priority: 4294967296 } })).status).toBe(200);
      } finally {
        await post(s.port, '/v2/repository/models/simple/unload');
      }
    }
  });

  test('the HTTP client reads them exactly (BigInt beyond 2^53 - 1) and ModelClient.loadModel sends a config object holding BigInts', async () => {
    const client = new HttpInferenceServerClient(`127.0.0.1:${s.port}`);
    const model = new ModelClient(`http://127.0.0.1:${s.port}`, 'simple', undefined, { lazyInit: true });
    try {
      const cfg = {
        name: 'simple', backend: 'js', max_batch_size: 4,
        input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [3] }], output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [3] }],
        dynamic_batching: { priority_levels: BigInt(MAX_UINT64), default_priority_level: 4294967295 },
      };
      await model.loadModel(cfg);
      const served = await client.getModelConfig('simple') as { dynamic_batching: Record<string, unknown>; max_batch_size: unknown };
      expect(served.dynamic_batching.priority_levels).toBe(BigInt(MAX_UINT64));
      expect(served.dynamic_batching.default_priority_level).toBe(4294967295);
      expect(served.max_batch_size).toBe(4);
    } finally {
      await model.close();
      client.close();
      await post(s.port, '/v2/repository/models/simple/unload');
    }
  });

  test('an overlong integer (millions of digits) is refused at once, as a number or a string, without holding the event loop', async () => {
    // Read as BigInts, such literals cost seconds each (BigInt() and printing one back grow faster
    // than the digits): one 57 MiB load request held every other request for 62 s.
    const digits = '9'.repeat(4_000_000);
    const cfg = (batch: string): string => `{"backend":"js","max_batch_size":${batch},` +
      '"input":[{"name":"IN","data_type":"TYPE_FP32","dims":[3]}],"output":[{"name":"OUT","data_type":"TYPE_FP32","dims":[3]}]}';
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 5);
    try {
      for (const [batch, message] of [
        [digits, "field 'max_batch_size': expected an integer (int32), got Infinity"],
        [`"${digits}"`, "field 'max_batch_size': expected an integer (int32), got a string of 4000000 characters"],
        [`[${Array(10).fill(digits).join(',')}]`, "field 'max_batch_size': expected an integer (int32), got [Infinity,Infinity"],
      ]) {
        const r = await post(s.port, '/v2/repository/models/simple/load', { parameters: { config: cfg(batch) } });
        expect(r.status).toBe(400);
        expect(r.error).toContain(`failed to load 'simple', the config parameter: ${message}`);
        expect(r.error.length).toBeLessThan(300);
      }
    } finally {
      clearInterval(ticker);
    }
    // Reading 40 MB of digits takes about a second here; as BigInts, 10 s and more.
    expect(longest).toBeLessThan(5000);
  }, 60_000);

  const DEVICE = (id: string): string => `"instance_group":[{"kind":"KIND_CPU","secondary_devices":[{"kind":"KIND_NVDLA","device_id":${id}}]}]`;
  test.each([
    ['a uint64 one past 2^64 - 1', `"dynamic_batching":{"priority_levels":${MAX_UINT64},"default_priority_level":1}`,
      '"dynamic_batching":{"priority_levels":18446744073709551616,"default_priority_level":1}',
      "field 'dynamic_batching.priority_levels': 18446744073709551616 is out of range for uint64 (0..18446744073709551615)"],
    ['a negative uint64', `"dynamic_batching":{"default_queue_policy":{"default_timeout_microseconds":${MAX_UINT64}}}`,
      '"dynamic_batching":{"default_queue_policy":{"default_timeout_microseconds":-1}}',
      "field 'dynamic_batching.default_queue_policy.default_timeout_microseconds': a negative value (-1) is not allowed for an unsigned (uint64) field"],
    ['a uint64 key one past 2^64 - 1',
      `"dynamic_batching":{"priority_levels":${MAX_UINT64},"default_priority_level":1,"priority_queue_policy":{"${MAX_UINT64}":{}}}`,
      `"dynamic_batching":{"priority_levels":${MAX_UINT64},"default_priority_level":1,"priority_queue_policy":{"18446744073709551616":{}}}`,
      "field 'dynamic_batching.priority_queue_policy[\"18446744073709551616\"]': 18446744073709551616 is out of range for uint64"],
    ['an int64 one past 2^63 - 1', DEVICE('9223372036854775807'), DEVICE('9223372036854775808'),
      "field 'instance_group[0].secondary_devices[0].device_id': 9223372036854775808 is out of range for int64 (-9223372036854775808..9223372036854775807)"],
    ['a dim no tensor can have', '"input":[{"name":"IN","data_type":"TYPE_FP32","dims":[9007199254740991]}]',
      '"input":[{"name":"IN","data_type":"TYPE_FP32","dims":[9007199254740992]}]',
      "model 'simple': input[0].dims[0] is 9007199254740992, which no tensor can have: a dimension is -1 (variable-size) or a size from 0 to 9007199254740991 (2^53 - 1)"],
  ])('the edge of the range: the last value loads and is served back exactly; %s is refused with 400 naming the field and the value',
    async (_what, accepted, refused, message) => {
      const load = (fields: string): Promise<Reply> => post(s.port, '/v2/repository/models/simple/load', {
        parameters: {
          config: '{"backend":"js","max_batch_size":4,"input":[{"name":"IN","data_type":"TYPE_FP32","dims":[3]}],' +
            `"output":[{"name":"OUT","data_type":"TYPE_FP32","dims":[3]}],${fields}}`,
        },
      });
      const ok = await load(accepted);
      expect({ status: ok.status, error: ok.error }).toEqual({ status: 200, error: '' });
      try {
        const body = (await get(s.port, '/v2/models/simple/config')).body.toString('utf8');
        // The accepted value, digit for digit (device_id is a 64-bit field Triton prints as a string).
        expect(body).toContain(accepted.match(/(\d{16,})/)![1]);
        const r = await load(refused);
        expect(r.status).toBe(400);
        expect(r.error).toContain(message);
      } finally {
        await post(s.port, '/v2/repository/models/simple/unload');
      }
    });
});

test('classification names classes from the label file', async () => {
  const r = await post(s.port, '/v2/models/labeled/infer', { ...input, outputs: [{ name: 'OUT', parameters: { classification: 2 } }] });
  expect(r.json().outputs).toEqual([{ name: 'OUT', datatype: 'BYTES', shape: [1, 2], data: ['0.900000:1:dog', '0.500000:2:bird'] }]);
});

test('without a repository, load and unload answer 503', async () => {
  const bare = await serve((t) => t.bind({
    modelName: 'm', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
  }));
  try {
    for (const action of ['load', 'unload']) {
      const r = await post(bare.port, `/v2/repository/models/m/${action}`);
      expect(r.status).toBe(503);
      expect(r.error).toContain('explicit model load / unload is not allowed');
    }
  } finally {
    await bare.triton.stop();
  }
});
