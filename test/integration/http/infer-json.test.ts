/**
 * JSON inference over HTTP: every datatype JSON can carry, flat and nested data, id echo,
 * request parameters and header forwarding, requested outputs, classification.
 */
import { closeAgent, post, serve, type Served, type WireOutput } from './http-helpers';
import { bindInferModels } from './models';

let s: Served;

beforeAll(async () => {
  s = await serve(bindInferModels, { httpHeaderForwardPattern: '^x-fwd-' });
});

afterAll(async () => {
  await s.triton.stop();
  closeAgent();
});

type Answer = { model_name: string; model_version: string; id?: string; outputs: WireOutput[] };

const JSON_VALUES: Record<string, unknown[]> = {
  BOOL: [true, false, true],
  UINT8: [0, 7, 255],
  UINT16: [0, 1, 65535],
  UINT32: [0, 1, 4294967295],
  UINT64: [0, 1, 9007199254740991],
  INT8: [-128, 0, 127],
  INT16: [-32768, 0, 32767],
  INT32: [-2147483648, 0, 2147483647],
  INT64: [-9007199254740991, 0, 9007199254740991],
  FP32: [1.5, -2.25, 0],
  FP64: [1e300, -0.1, 3.141592653589793],
  BYTES: ['', 'héllo', 'a b'],
};

describe('JSON tensors', () => {
  test.each(Object.keys(JSON_VALUES))('%s round trip, nested data in, flat data out', async (dtype) => {
    const values = JSON_VALUES[dtype];
    const r = await post(s.port, `/v2/models/echo_${dtype}/infer`, {
      inputs: [{ name: 'IN', datatype: dtype, shape: [1, 3], data: [values] }],
    });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['inference-header-content-length']).toBeUndefined();
    const a = r.json<Answer>();
    expect(a.model_name).toBe(`echo_${dtype}`);
    expect(a.model_version).toBe('1');
    expect(a.outputs).toEqual([{ name: 'OUT', datatype: dtype, shape: [1, 3], data: values }]);
  });

  test('2-D nested and flat data are the same tensor', async () => {
    for (const data of [[[1, 2], [3, 4]], [1, 2, 3, 4]]) {
      const r = await post(s.port, '/v2/models/echo_INT32/infer', { inputs: [{ name: 'IN', datatype: 'INT32', shape: [2, 2], data }] });
      expect(r.json<Answer>().outputs[0]).toMatchObject({ shape: [2, 2], data: [1, 2, 3, 4] });
    }
  });

  test('FP16 and BF16 cannot travel as JSON', async () => {
    for (const dtype of ['FP16', 'BF16']) {
      const r = await post(s.port, `/v2/models/echo_${dtype}/infer`, { inputs: [{ name: 'IN', datatype: dtype, shape: [1, 1], data: [1] }] });
      expect(r.status).toBe(400);
      expect(r.error).toContain(`sending ${dtype} data via JSON is not supported`);
    }
  });

  // Triton's L0_http sends 15 and 18 values for a [1,16] input and looks for this text.
  test.each([15, 18])('%i values for a [1,16] input: Triton\'s "Shape does not match" text, then which input', async (n) => {
    const r = await post(s.port, '/v2/models/echo_INT32/infer', {
      inputs: [{ name: 'IN', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: n }, (_, i) => i) }],
    });
    expect(r.status).toBe(400);
    const { error } = r.json<{ error: string }>();
    expect(error.startsWith("Unable to parse 'data': Shape does not match true shape of 'data' field (")).toBe(true);
    expect(error).toContain("input 'IN' for model 'echo_INT32'");
  });

  test('several inputs and outputs, the id echoed', async () => {
    const r = await post(s.port, '/v2/models/pair/infer', {
      id: 'req-42',
      inputs: [{ name: 'A', datatype: 'FP32', shape: [3], data: [1, 2, 3] }, { name: 'B', datatype: 'INT32', shape: [3], data: [4, 5, 6] }],
    });
    const a = r.json<Answer>();
    expect(a.id).toBe('req-42');
    expect(a.outputs.map((o) => [o.name, o.data])).toEqual([['OA', [1, 2, 3]], ['OB', [4, 5, 6]]]);
  });

  test('requested outputs: only those come back, in the requested order', async () => {
    const r = await post(s.port, '/v2/models/pair/infer', {
      inputs: [{ name: 'A', datatype: 'FP32', shape: [3], data: [1, 2, 3] }, { name: 'B', datatype: 'INT32', shape: [3], data: [4, 5, 6] }],
      outputs: [{ name: 'OB' }],
    });
    expect(r.json<Answer>().outputs.map((o) => o.name)).toEqual(['OB']);
  });

  test('an id is not echoed when absent', async () => {
    const r = await post(s.port, '/v2/models/echo_FP32/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [1] }] });
    expect(r.json<Answer>().id).toBeUndefined();
  });
});

describe('parameters', () => {
  const input = { name: 'IN', datatype: 'FP32', shape: [1], data: [0] };
  const received = (r: { json<T>(): T }): Record<string, unknown> =>
    JSON.parse((r.json<Answer>().outputs[0].data as string[])[0]) as Record<string, unknown>;

  test('custom parameters reach the model; reserved ones do not', async () => {
    const r = await post(s.port, '/v2/models/params/infer', {
      parameters: { mode: 'fast', k: 3, flag: true, priority: 0, timeout: 0, sequence_id: 0 }, inputs: [input],
    });
    expect(r.status).toBe(200);
    expect(received(r)).toEqual({ mode: 'fast', k: 3, flag: true });
  });

  test('forwarded headers become string parameters', async () => {
    const r = await post(s.port, '/v2/models/params/infer', { inputs: [input] }, { 'X-Fwd-Tenant': 'acme', 'X-Other': 'no' });
    expect(received(r)).toEqual({ 'X-Fwd-Tenant': 'acme' });
  });

  test('a forwarded header named like a reserved parameter is refused with Triton\'s text', async () => {
    const r = await post(s.port, '/v2/models/params/infer', { inputs: [input] }, { 'x-fwd-x': '1', Triton_Thing: 'no' });
    expect(r.status).toBe(200);  // Triton_Thing does not match ^x-fwd-
    const own = await serve(bindInferModels, { httpHeaderForwardPattern: '(?i)^(x-fwd-|priority|triton_)' });
    try {
      const reserved = await post(own.port, '/v2/models/params/infer', { inputs: [input] }, { Priority: '3' });
      expect(reserved.status).toBe(400);
      expect(reserved.error).toBe("Header 'Priority' is reserved for Triton usage and cannot be forwarded.");
      const prefixed = await post(own.port, '/v2/models/params/infer', { inputs: [input] }, { 'triton_enable_x': '1' });
      expect(prefixed.error).toBe("Header 'triton_enable_x' is reserved for Triton usage and cannot be forwarded.");
      expect(received(await post(own.port, '/v2/models/params/infer', { inputs: [input] }, { 'X-FWD-A': 'b' }))).toEqual({ 'X-FWD-A': 'b' });
    } finally {
      await own.triton.stop();
    }
  });

  test('triton_ keys are refused', async () => {
    const r = await post(s.port, '/v2/models/params/infer', { parameters: { triton_x: 1 }, inputs: [input] });
    expect(r.status).toBe(400);
    expect(r.error).toContain('reserved for Triton usage');
  });
});

describe('classification', () => {
  const scores = [0.1, 0.7, 0.05, 0.9, 0.3];

  test('top-N as "value:index" BYTES, per batch row, in JSON', async () => {
    const r = await post(s.port, '/v2/models/scores/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [2, 5], data: [scores, [5, 4, 3, 2, 1]] }],
      outputs: [{ name: 'OUT', parameters: { classification: 2 } }],
    });
    expect(r.status).toBe(200);
    expect(r.json<Answer>().outputs[0]).toEqual({
      name: 'OUT', datatype: 'BYTES', shape: [2, 2],
      data: ['0.900000:3', '0.700000:1', '5.000000:0', '4.000000:1'],
    });
  });

  test('N larger than the classes returns every class; N <= 0 is refused', async () => {
    const body = (n: unknown): object => ({
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 5], data: scores }], outputs: [{ name: 'OUT', parameters: { classification: n } }],
    });
    expect((await post(s.port, '/v2/models/scores/infer', body(10))).json<Answer>().outputs[0].shape).toEqual([1, 5]);
    for (const n of [0, -1, 1.5, 'two']) {
      const r = await post(s.port, '/v2/models/scores/infer', body(n));
      expect(r.status).toBe(400);
      expect(r.error).toContain('classification');
    }
  });
});
