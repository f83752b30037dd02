/**
 * Management routes over HTTP: log settings, trace settings (global and per model, and a
 * trace file actually written), system shared memory end to end (register, infer with an input
 * read from and an output written to a POSIX region, status, unregister), CUDA shared memory
 * without a device, and shared memory refused when the server does not allow it.
 */
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, truncateSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closeAgent, echo, get, post, serve, type Served } from './http-helpers';
import type { Triton } from '../../../ts/triton';
import { Recorder, waitFor } from '../helpers';

function bindEcho(t: Triton): void {
  t.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [4] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [4] }],
    config: { maxBatchSize: 2 },
  });
}

const traceDir = mkdtempSync(path.join(os.tmpdir(), 'infernode-trace-'));
const traceFile = path.join(traceDir, 'trace.json');
let s: Served;

/** A server of its own with client shared memory on and one model, 'held', whose batches `recorder` holds. */
function serveHeld(recorder: Recorder): Promise<Served> {
  return serve((t) => t.bind({
    modelName: 'held', inferFunc: recorder.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 4 },
  }), { allowClientShm: true });
}

/** Every entry of the indexed trace files (`<file>.<index>`, each one JSON array, as Triton writes them). */
function indexedTraceEntries<T>(): T[] {
  const indexed = readdirSync(traceDir).filter((f) => /^trace\.json\.[0-9]+$/.test(f));
  return indexed.sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()))
    .flatMap((f) => JSON.parse(readFileSync(path.join(traceDir, f), 'utf8')) as T[]);
}

beforeAll(async () => {
  s = await serve(bindEcho, { allowClientShm: true, traceConfig: [`triton,file=${traceFile}`, 'level=OFF', 'rate=1'] });
});

afterAll(async () => {
  await s.triton.stop();
  rmSync(traceDir, { recursive: true, force: true });
  closeAgent();
});

describe('logging', () => {
  test('GET shows every setting; POST updates and answers with all of them', async () => {
    const before = (await get(s.port, '/v2/logging')).json();
    expect(before).toMatchObject({ log_file: '', log_info: false, log_error: true, log_verbose_level: 0, log_format: 'default' });
    const after = await post(s.port, '/v2/logging', { log_verbose_level: 2, log_format: 'ISO8601' });
    expect(after.status).toBe(200);
    expect(after.json()).toMatchObject({ log_verbose_level: 2, log_format: 'ISO8601', log_error: true });
    expect((await get(s.port, '/v2/logging')).json().log_verbose_level).toBe(2);
  });

  test.each([
    [{ log_file: '/etc/passwd' }, 'cannot be changed over the network'],
    [{ log_info: 'yes' }, "'log_info' must be a boolean"],
    [{ log_verbose_level: -1 }, 'non-negative integer'],
    [{ colour: true }, "unknown log setting 'colour'"],
    [[1], 'must be a JSON object'],
  ])('POST %j is refused', async (body, message) => {
    const r = await post(s.port, '/v2/logging', body);
    expect(r.status).toBe(400);
    expect(r.error).toContain(message);
  });
});

describe('trace settings', () => {
  test('global settings: GET, POST, and a per-model override that null clears', async () => {
    expect((await get(s.port, '/v2/trace/setting')).json()).toMatchObject({ trace_level: ['OFF'], trace_rate: '1', trace_file: traceFile });
    const model = await post(s.port, '/v2/models/echo/trace/setting', { trace_level: ['TIMESTAMPS'], trace_count: '5' });
    expect(model.status).toBe(200);
    expect(model.json()).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_count: '5' });
    expect((await get(s.port, '/v2/trace/setting')).json()).toMatchObject({ trace_level: ['OFF'], trace_count: '-1' });
    const cleared = await post(s.port, '/v2/models/echo/trace/setting', { trace_count: null });
    expect(cleared.json()).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_count: '-1' });
  });

  test('clearing a global setting (null) goes back to its start-up value, not the built-in default', async () => {
    // This server started with rate=1 (the built-in default is 1000).
    expect((await post(s.port, '/v2/trace/setting', { trace_rate: '50' })).json()).toMatchObject({ trace_rate: '50' });
    expect((await post(s.port, '/v2/trace/setting', { trace_rate: null })).json()).toMatchObject({ trace_rate: '1' });
  });

  test('a traced request lands in the trace file with the HTTP timestamps', async () => {
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: ['TIMESTAMPS'], log_frequency: '1' });
    const r = await post(s.port, '/v2/models/echo/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    expect(r.status).toBe(200);
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: null, log_frequency: null });
    // log_frequency 1: the trace went to its own indexed file at once.
    expect(existsSync(`${traceFile}.0`)).toBe(true);
    const traces = indexedTraceEntries<{ model_name: string; model_version: string; timestamps: { name: string }[] }>();
    const trace = traces.find((t) => t.model_name === 'echo')!;
    expect(trace.model_version).toBe('1');
    expect(trace.timestamps.map((t) => t.name)).toEqual(['HTTP_RECV_START', 'HTTP_INFER_START', 'HTTP_SEND_START']);
  });

  test('level TENSORS records the request\'s inputs and outputs as Triton\'s trace file has them', async () => {
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: ['TIMESTAMPS', 'TENSORS'], log_frequency: '1' });
    const r = await post(s.port, '/v2/models/echo/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [9, 8, 7, 6.5] }] });
    expect(r.status).toBe(200);
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: null, log_frequency: null });
    type Entry = { id: number; model_name?: string; activity?: string; tensor?: { name: string; data: string; shape: string; dtype: string } };
    const entries = indexedTraceEntries<Entry>();
    const traced = entries.filter((e) => e.model_name === 'echo').at(-1)!;
    const tensors = entries.filter((e) => e.id === traced.id && e.activity);
    expect(tensors).toEqual([
      { id: traced.id, activity: 'TENSOR_QUEUE_INPUT', tensor: { name: 'IN', data: '9,8,7,6.5', shape: '1,4', dtype: 'FP32' } },
      { id: traced.id, activity: 'TENSOR_BACKEND_INPUT', tensor: { name: 'IN', data: '9,8,7,6.5', shape: '1,4', dtype: 'FP32' } },
      { id: traced.id, activity: 'TENSOR_BACKEND_OUTPUT', tensor: { name: 'OUT', data: '9,8,7,6.5', shape: '1,4', dtype: 'FP32' } },
    ]);
  });

  test('trace_count is counted down: GET shows "0" once spent, and the traces are in an indexed file before the server stops', async () => {
    // qa/L0_trace/test.sh "Update trace count" (there for the global setting).
    const before = readdirSync(traceDir).filter((f) => /^trace\.json\.[0-9]+$/.test(f)).length;
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: ['TIMESTAMPS'], trace_count: '2' });
    for (let i = 0; i < 3; i++) {
      expect((await post(s.port, '/v2/models/echo/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] })).status).toBe(200);
    }
    expect((await get(s.port, '/v2/models/echo/trace/setting')).json()).toMatchObject({ trace_count: '0' });
    expect((await get(s.port, '/v2/trace/setting')).json()).toMatchObject({ trace_count: '-1' });
    const spent = JSON.parse(readFileSync(`${traceFile}.${before}`, 'utf8')) as { model_name: string }[];
    expect(spent.map((e) => e.model_name)).toEqual(['echo', 'echo']);
    await post(s.port, '/v2/models/echo/trace/setting', { trace_level: null, trace_count: null });
  });

  test.each([
    ['/v2/trace/setting', { trace_file: '/tmp/elsewhere' }, 400, 'cannot be changed over the network'],
    ['/v2/trace/setting', { trace_level: ['LOUD'] }, 400, "trace level 'LOUD' is not supported"],
    ['/v2/trace/setting', { trace_level: ['OFF', 'TIMESTAMPS'] }, 400, "Expect only one trace level 'OFF' is specified"],
    ['/v2/trace/setting', { trace_rate: '0' }, 400, "'trace_rate' must be at least 1"],
    ['/v2/trace/setting', { trace_rate: '99999999999' }, 400,
      "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: 99999999999"],
    ['/v2/trace/setting', { trace_rate: 'often' }, 400, "Unable to parse 'trace_rate', got: often"],
    ['/v2/trace/setting', { trace_count: '-2' }, 400, "Unable to parse 'trace_count'. Expecting value >= -1, got:-2"],
    ['/v2/trace/setting', { log_frequency: '4294967296' }, 400, "Unable to parse 'log_frequency', value is out of range"],
    ['/v2/logging', { log_verbose_level: 10000000000 }, 400,
      "Unable to parse 'log_verbose_level', value is out of range [ 0, 2147483647 ], got: 10000000000"],
    ['/v2/models/ghost/trace/setting', {}, 404, "'ghost'"],
  ])('POST %s %j is refused', async (route, body, status, message) => {
    const r = await post(s.port, route, body);
    expect(r.status).toBe(status);
    expect(r.error).toContain(message);
  });
});

describe('system shared memory', () => {
  const key = `/infernode_http_test_${process.pid}`;
  const file = `/dev/shm${key}`;

  beforeAll(() => {
    // A POSIX shm object is a file under /dev/shm: 64 bytes, the input at 0, the output at 32.
    const region = Buffer.alloc(64);
    Buffer.from(new Float32Array([1.5, 2.5, 3.5, 4.5]).buffer).copy(region, 0);
    writeFileSync(file, region);
  });

  afterAll(() => {
    if (existsSync(file)) unlinkSync(file);
  });

  test('register, infer from and into the region, status, unregister', async () => {
    expect((await post(s.port, '/v2/systemsharedmemory/region/r1/register', { key, offset: 0, byte_size: 64 })).status).toBe(200);
    expect((await get(s.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toEqual([{ name: 'r1', key, offset: 0, byte_size: 64 }]);
    expect((await get(s.port, '/v2/systemsharedmemory/region/r1/status')).json<unknown[]>()).toHaveLength(1);
    const r = await post(s.port, '/v2/models/echo/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'r1', shared_memory_byte_size: 16 } }],
      outputs: [{ name: 'OUT', parameters: { shared_memory_region: 'r1', shared_memory_offset: 32, shared_memory_byte_size: 32 } }],
    });
    expect(r.status).toBe(200);
    expect(r.json().outputs).toEqual([{
      name: 'OUT', datatype: 'FP32', shape: [1, 4],
      parameters: { shared_memory_region: 'r1', shared_memory_byte_size: 16, shared_memory_offset: 32 },
    }]);
    const region = readFileSync(file);
    expect([...new Float32Array(region.buffer.slice(region.byteOffset + 32, region.byteOffset + 48))]).toEqual([1.5, 2.5, 3.5, 4.5]);
    expect((await post(s.port, '/v2/systemsharedmemory/region/r1/unregister')).status).toBe(200);
    expect((await get(s.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toEqual([]);
  });

  test('errors: bounds, unknown region, duplicate name, bad key', async () => {
    await post(s.port, '/v2/systemsharedmemory/region/r2/register', { key, offset: 0, byte_size: 64 });
    const beyond = await post(s.port, '/v2/models/echo/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'r2', shared_memory_offset: 56, shared_memory_byte_size: 16 } }],
    });
    expect(beyond.status).toBe(400);
    expect(beyond.error).toContain('exceeds the 64 bytes');
    expect(beyond.error).toContain("Invalid offset + byte size for shared memory region: 'r2'");  // what Triton's QA matches
    const tooSmall = await post(s.port, '/v2/models/echo/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }],
      outputs: [{ name: 'OUT', parameters: { shared_memory_region: 'r2', shared_memory_byte_size: 8 } }],
    });
    expect(tooSmall.status).toBe(400);
    expect(tooSmall.error).toContain('should be at least 16 bytes');
    const unknown = await post(s.port, '/v2/models/echo/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'nope', shared_memory_byte_size: 16 } }],
    });
    expect(unknown.status).toBe(404);
    expect(unknown.error).toContain("Unable to find shared memory region: 'nope'");
    const twice = await post(s.port, '/v2/systemsharedmemory/region/r2/register', { key, offset: 0, byte_size: 64 });
    expect(twice.status).toBe(400);
    expect(twice.error).toContain("'r2' already in manager");
    const badKey = await post(s.port, '/v2/systemsharedmemory/region/r3/register', { key: '/no_such_infernode_key', offset: 0, byte_size: 8 });
    expect(badKey.status).toBe(500);  // as Triton: INTERNAL
    expect(badKey.error).toContain("Unable to open shared memory region: '/no_such_infernode_key'");
    const slashes = await post(s.port, '/v2/systemsharedmemory/region/r4/register', { key: '///', offset: 0, byte_size: 8 });
    expect(slashes.status).toBe(400);
    expect(slashes.error).toBe("cannot register shared memory region 'r4' - invalid shm key '///'");
    const reserved = await post(s.port, '/v2/systemsharedmemory/region/r5/register',
      { key: '//triton_python_backend_shm_region_1', offset: 0, byte_size: 8 });
    expect(reserved.status).toBe(400);
    expect(reserved.error).toBe("cannot register shared memory region 'r5' with key '//triton_python_backend_shm_region_1' as " +
      "the key contains the reserved prefix 'triton_python_backend_shm_region_'");
    expect((await get(s.port, '/v2/systemsharedmemory/region/ghost/status')).status).toBe(404);
    expect((await post(s.port, '/v2/systemsharedmemory/unregister')).status).toBe(200);
    expect((await get(s.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toEqual([]);
  });

  // The texts Triton's QA matches (qa/L0_shared_memory/shared_memory_test.py): registering past
  // the object's end answered infernode's own words, an offset at the region's end was reported
  // as "offset + byte size", and 64-bit offsets and sizes were refused as not integers (JSON.parse
  // rounds them) before any region check.
  test("Triton's texts: register out of bounds, offset out of bounds, 64-bit overflow", async () => {
    // test_register_out_of_bound: a 64-byte object.
    for (const [offset, byteSize] of [[0, 65], [1, 64], [64, 1], [65, 0]]) {
      const r = await post(s.port, '/v2/systemsharedmemory/region/oob/register', { key, offset, byte_size: byteSize });
      expect(r.status).toBe(400);
      expect(r.error).toMatch(/^failed to register shared memory region 'oob': invalid args/);
    }
    expect((await post(s.port, '/v2/systemsharedmemory/region/o64/register', { key, offset: 0, byte_size: 64 })).status).toBe(200);
    try {
      const infer = (parameters: string) => post(s.port, '/v2/models/echo/infer', '{"inputs":[{"name":"IN","datatype":"FP32",' +
        `"shape":[1,4],"data":[1,2,3,4]}],"outputs":[{"name":"OUT","parameters":{"shared_memory_region":"o64",${parameters}}}]}`);
      // test_infer_offset_out_of_bound: offset at the region's end (gRPC variant), and 2^64 - 32 (HTTP variant).
      for (const parameters of ['"shared_memory_offset":64,"shared_memory_byte_size":16',
        '"shared_memory_offset":64,"shared_memory_byte_size":0',
        '"shared_memory_offset":18446744073709551584,"shared_memory_byte_size":16']) {
        const r = await infer(parameters);
        expect(r.status).toBe(400);
        expect(r.error).toContain("Invalid offset for shared memory region: 'o64'");
      }
      // test_infer_integer_overflow: byte_size 2^64 - 32 at offset 32.
      const overflow = await infer('"shared_memory_offset":32,"shared_memory_byte_size":18446744073709551584');
      expect(overflow.status).toBe(400);
      expect(overflow.error).toContain('Integer overflow detected: byte_size (18446744073709551584) + offset (32) ' +
        "exceeds maximum value (18446744073709551615) for region 'o64'");
      // Without overflow (offset 0) a huge size is out of bounds, as in Triton; 2^64 is no size_t.
      expect((await infer('"shared_memory_byte_size":18446744073709551584')).error)
        .toContain("Invalid offset + byte size for shared memory region: 'o64'");
      expect((await infer('"shared_memory_byte_size":18446744073709551616')).error)
        .toContain('shared_memory_byte_size must be a non-negative integer below 2^64, got 18446744073709551616');
      // A long literal that is a safe integer reads as that number.
      expect((await infer('"shared_memory_offset":32,"shared_memory_byte_size":1000000000000000')).error)
        .toContain("Invalid offset + byte size for shared memory region: 'o64': offset 32 + byte size 1000000000000000 exceeds");
    } finally {
      await post(s.port, '/v2/systemsharedmemory/unregister');
    }
  });

  test('unregistering a region a request still writes into waits for that request, as Triton', async () => {
    const recorder = new Recorder();
    const own = await serveHeld(recorder);
    let opened: ReturnType<Recorder['hold']> | undefined;
    try {
      expect((await post(own.port, '/v2/systemsharedmemory/region/rh/register', { key, offset: 0, byte_size: 64 })).status).toBe(200);
      opened = recorder.hold();
      const pending = post(own.port, '/v2/models/held/infer', {
        inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], data: [7, 8, 9, 10] }],
        outputs: [{ name: 'OUT', parameters: { shared_memory_region: 'rh', shared_memory_offset: 48, shared_memory_byte_size: 16 } }],
      });
      await waitFor(() => recorder.active === 1, 'the request to reach the model');
      // Accepted at once; the region stays (listed, its name taken) until the request is answered.
      expect((await post(own.port, '/v2/systemsharedmemory/region/rh/unregister')).status).toBe(200);
      expect((await get(own.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toHaveLength(1);
      expect((await post(own.port, '/v2/systemsharedmemory/region/rh/register', { key, offset: 0, byte_size: 64 })).status).toBe(400);
      opened!.open();
      const answered = await pending;
      expect(answered.status).toBe(200);
      const region = readFileSync(file);
      expect([...new Float32Array(region.buffer.slice(region.byteOffset + 48, region.byteOffset + 64))]).toEqual([7, 8, 9, 10]);
      expect((await get(own.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toEqual([]);
    } finally {
      opened?.open();  // a failed check must not leave the request held through stop()
      await own.triton.stop();
    }
  });

  // Only output regions used to be held: unregistering all regions while a request read its input
  // from one closed that region at once, and status no longer listed it. Triton holds every region
  // a request uses (shared_memory_manager.cc UnregisterHelper; qa L0_shared_memory
  // TestSharedMemoryUnregister._test_shm_found: status lists all of them during the inference).
  test('unregistering all regions while a request reads its input from one keeps it listed until the request is answered', async () => {
    const recorder = new Recorder();
    const own = await serveHeld(recorder);
    let opened: ReturnType<Recorder['hold']> | undefined;
    try {
      expect((await post(own.port, '/v2/systemsharedmemory/region/input0_data/register', { key, offset: 0, byte_size: 16 })).status).toBe(200);
      expect((await post(own.port, '/v2/systemsharedmemory/region/output0_data/register', { key, offset: 32, byte_size: 32 })).status).toBe(200);
      const fd = openSync(file, 'r+');
      writeSync(fd, Buffer.alloc(16), 0, 16, 32);  // the output's bytes, written again below
      closeSync(fd);
      opened = recorder.hold();
      const pending = post(own.port, '/v2/models/held/infer', {
        inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'input0_data', shared_memory_byte_size: 16 } }],
        outputs: [{ name: 'OUT', parameters: { shared_memory_region: 'output0_data', shared_memory_byte_size: 16 } }],
      });
      await waitFor(() => recorder.active === 1, 'the request to reach the model');
      expect((await post(own.port, '/v2/systemsharedmemory/unregister')).status).toBe(200);
      expect((await get(own.port, '/v2/systemsharedmemory/status')).json<{ name: string }[]>().map((r) => r.name).sort())
        .toEqual(['input0_data', 'output0_data']);
      expect((await post(own.port, '/v2/systemsharedmemory/region/input0_data/register', { key, offset: 0, byte_size: 16 })).error)
        .toContain("'input0_data' already in manager");
      opened!.open();
      expect((await pending).status).toBe(200);
      const region = readFileSync(file);
      expect([...new Float32Array(region.buffer.slice(region.byteOffset + 32, region.byteOffset + 48))]).toEqual([1.5, 2.5, 3.5, 4.5]);
      expect((await get(own.port, '/v2/systemsharedmemory/status')).json<unknown[]>()).toEqual([]);
    } finally {
      opened?.open();
      await own.triton.stop();
    }
  });

  // Regions used to stay open after stop() until their objects were collected: an embedding
  // process kept the client's shm objects (and CUDA IPC mappings) open for as long as it ran.
  test('stopping the server closes the regions it still had', async () => {
    const own = await serve(bindEcho, { allowClientShm: true });
    const openFds = (): string[] => readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [readlinkSync(`/proc/self/fd/${fd}`)];
      } catch {
        return [];  // the directory's own descriptor, gone once read
      }
    }).filter((target) => target === file);
    expect((await post(own.port, '/v2/systemsharedmemory/region/kept/register', { key, offset: 0, byte_size: 64 })).status).toBe(200);
    expect(openFds()).toHaveLength(1);
    const manager = own.triton.server!.sharedMemory;
    await own.triton.stop();
    expect(openFds()).toEqual([]);
    expect(manager.systemStatus()).toEqual([]);
  });

  // Shrinking the object after registration used to kill the server (SIGBUS reading the mapping).
  test('an object truncated after registration answers 400 and the server keeps serving', async () => {
    const shrinking = `${key}_shrink`;
    writeFileSync(`/dev/shm${shrinking}`, Buffer.alloc(64));
    try {
      expect((await post(s.port, '/v2/systemsharedmemory/region/t1/register', { key: shrinking, offset: 0, byte_size: 64 })).status).toBe(200);
      truncateSync(`/dev/shm${shrinking}`, 0);
      const r = await post(s.port, '/v2/models/echo/infer', {
        inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 't1', shared_memory_byte_size: 16 } }],
      });
      expect(r.status).toBe(400);
      expect(r.error).toContain(`shared memory region 't1' (key '${shrinking}') needs 16 bytes of its shared memory object, ` +
        'but the object now holds 0 bytes');
      expect((await get(s.port, '/v2/health/live')).status).toBe(200);
    } finally {
      await post(s.port, '/v2/systemsharedmemory/unregister');
      rmSync(`/dev/shm${shrinking}`, { force: true });
    }
  });
});

describe('CUDA shared memory without a CUDA device', () => {
  test('status is empty, register answers clearly', async () => {
    expect((await get(s.port, '/v2/cudasharedmemory/status')).json<unknown[]>()).toEqual([]);
    const r = await post(s.port, '/v2/cudasharedmemory/region/c1/register', {
      raw_handle: { b64: Buffer.alloc(64).toString('base64') }, device_id: 0, byte_size: 16,
    });
    expect(r.status).toBe(503);
    expect(r.error).toContain('no CUDA device');
    const bad = await post(s.port, '/v2/cudasharedmemory/region/c1/register', { raw_handle: 'abc', byte_size: 16 });
    expect(bad.status).toBe(400);
    expect(bad.error).toContain("'raw_handle' must be");
    expect((await post(s.port, '/v2/cudasharedmemory/unregister')).status).toBe(200);
  });
});

test('shared memory is refused unless the server allows it', async () => {
  const closed = await serve(bindEcho);
  try {
    // As Triton: register and unregister are 501 (UNSUPPORTED), status answers (no regions).
    for (const route of ['/v2/systemsharedmemory/region/x/register', '/v2/systemsharedmemory/unregister',
      '/v2/cudasharedmemory/region/x/register', '/v2/cudasharedmemory/unregister']) {
      const r = await post(closed.port, route, { key: '/x', byte_size: 1 });
      expect(r.status).toBe(501);
      expect(r.error).toContain("Client shared memory is disabled. Start the server with '--allow-client-shm=true'");
    }
    for (const route of ['/v2/systemsharedmemory/status', '/v2/cudasharedmemory/status']) {
      const r = await get(closed.port, route);
      expect(r.status).toBe(200);
      expect(r.json()).toEqual([]);
    }
    // No region can exist: Triton's NOT_FOUND, with the hint.
    const infer = await post(closed.port, '/v2/models/echo/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'r', shared_memory_byte_size: 16 } }],
    });
    expect(infer.status).toBe(404);
    expect(infer.error).toContain("Unable to find shared memory region: 'r'");
    expect(infer.error).toContain("start the server with '--allow-client-shm=true'");
  } finally {
    await closed.triton.stop();
  }
});
