/**
 * Property tests of the HTTP infer decoding (ts/server/http/infer-request.ts, body.ts,
 * tensor-codec.ts): hostile JSON and binary bodies — wrong field types, huge and negative
 * Inference-Header-Content-Length values, binary_data_size mismatches, nesting 100k levels deep
 * — produce either a decoded call or an InferenceServerError with a 4xx status, never another
 * exception. Valid requests encoded by infernode's own HTTP client decode to the same tensors.
 * A body of more arrays than JSON.parse may be given (json-scan.ts) decodes to the same call or
 * error as the same body without them, nested, ragged and malformed data included.
 * A smaller number of the hostile bodies go through a real server on loopback (a bound
 * identity model): every answer is a well-formed HTTP response, 200 or 4xx with a JSON error,
 * and the server keeps serving.
 */
import fc from 'fast-check';
import { encodeInferRequest } from '../../ts/client/http-infer';
import { InferenceServerError, notFound } from '../../ts/errors';
import { decodeInferRequest, parseHeaderLength, type InferDecodeOptions, type RawInputSpec } from '../../ts/server/http/infer-request';
import { DATA_TYPES, NDArray } from '../../ts/tensor';
import { closeAgent, echo, post, rawExchange, rawPost, serve, type Served } from '../integration/http/http-helpers';
import { settings } from './fc-settings';
import { hostileValue, jsonText, namedTensors, smallShape, tensorBytes } from './wire-arbitraries';

/** Runs `fn`; returns its value or the InferenceServerError it threw with a 4xx status (anything else fails). */
function decodedOr4xx<T>(fn: () => T): T | InferenceServerError {
  try {
    return fn();
  } catch (err) {
    if (err instanceof InferenceServerError && err.httpStatus >= 400 && err.httpStatus < 500) return err;
    throw err;
  }
}

// ---- hostile requests ----

const hostileParams = fc.record({
  binary_data_size: fc.oneof(fc.nat(48), hostileValue),
  shared_memory_region: fc.oneof(fc.constantFrom('r', ''), hostileValue),
  shared_memory_byte_size: fc.oneof(fc.nat(64), hostileValue),
  shared_memory_offset: fc.oneof(fc.nat(64), hostileValue),
  binary_data: fc.oneof(fc.boolean(), hostileValue),
  classification: fc.oneof(fc.integer({ min: -2, max: 5 }), hostileValue),
}, { requiredKeys: [] });

const hostileInput = fc.record({
  name: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('IN', 'IN0', '') }, hostileValue),
  datatype: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...DATA_TYPES) }, fc.constantFrom('FP33', 'fp32', ''), hostileValue),
  shape: fc.oneof(smallShape, fc.constant([1, -1]), fc.constant([2 ** 30, 2 ** 30]), fc.array(hostileValue, { maxLength: 3 }), hostileValue),
  data: fc.oneof(fc.array(fc.oneof(fc.double(), fc.integer(), fc.boolean(), fc.string({ maxLength: 3 }), hostileValue), { maxLength: 8 }), hostileValue),
  parameters: fc.oneof(hostileParams, hostileValue),
}, { requiredKeys: [] });

const hostileOutput = fc.record({
  name: fc.oneof(fc.constantFrom('OUT', 'x'), hostileValue),
  parameters: fc.oneof(hostileParams, hostileValue),
}, { requiredKeys: [] });

const requestParamKey = fc.constantFrom('priority', 'timeout', 'binary_data_output', 'sequence_id', 'triton_x', 'headers', '__proto__', 'constructor', 'custom');

const hostileHeader = fc.record({
  id: fc.oneof({ weight: 5, arbitrary: fc.string({ maxLength: 4 }) }, hostileValue),
  inputs: fc.oneof({ weight: 4, arbitrary: fc.array(hostileInput, { maxLength: 3 }) }, { weight: 1, arbitrary: hostileValue }),
  outputs: fc.oneof(fc.array(hostileOutput, { maxLength: 2 }), hostileValue),
  parameters: fc.oneof({ weight: 5, arbitrary: fc.dictionary(requestParamKey, hostileValue, { maxKeys: 3 }) }, hostileValue),
}, { requiredKeys: ['inputs'] });

/** `arb` one time in ten, else null. */
function rarely<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
}

/** A whole body: its JSON text (sometimes cut short or replaced by random bytes), binary bytes, and the header value. */
const hostileBody = fc.record({
  header: hostileHeader,
  cutAt: rarely(fc.nat()),
  randomJson: rarely(fc.uint8Array({ maxLength: 64 })),
  binary: fc.uint8Array({ maxLength: 48 }),
  headerLength: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('exact', 'absent') },
    fc.constant('0'),
    fc.constantFrom('-1', '99999999999', '2147483648', '2147483647', '1e3', '0x10', ' 12 ', 'abc', ''),
    fc.nat(200).map(String),
  ),
}).map(({ header, cutAt, randomJson, binary, headerLength }) => {
  let json = randomJson ? Buffer.from(randomJson) : Buffer.from(jsonText(header));
  if (cutAt !== null) json = json.subarray(0, cutAt % (json.length + 1));
  const body = headerLength === 'absent' ? json : Buffer.concat([json, binary]);
  const value = headerLength === 'exact' ? String(json.length) : headerLength === 'absent' ? undefined : headerLength;
  return { body, headerLength: value, [fc.toStringMethod]: () => describeBody(body, value) };
});

/** A failing body as a report can show it: a deep nesting of 100k levels reads as its head, tail and length. */
function describeBody(body: Buffer, headerLength: string | undefined): string {
  const text = JSON.stringify(body.toString('latin1'));
  const shown = text.length > 400 ? `${text.slice(0, 200)} ... ${text.slice(-200)} (${body.length} bytes)` : text;
  return `{ body: ${shown}, headerLength: ${JSON.stringify(headerLength)} }`;
}

/** Raw-binary requests need the model's input; these are the kinds of model the server can have. */
const RAW_SPECS: Record<string, RawInputSpec> = {
  fp32: { name: 'IN', dtype: 'FP32', dims: [-1], batching: true, inputCount: 1 },
  fixed: { name: 'IN', dtype: 'INT16', dims: [2, 3], batching: false, inputCount: 1 },
  bytes: { name: 'IN', dtype: 'BYTES', dims: [1], batching: false, inputCount: 1 },
  twovar: { name: 'IN', dtype: 'UINT8', dims: [-1, -1], batching: false, inputCount: 1 },
  two: { name: 'A', dtype: 'FP32', dims: [4], batching: true, inputCount: 2 },
};

function decodeOptions(modelName: string, rawHeaders: string[] = []): InferDecodeOptions {
  return {
    modelName,
    rawHeaders,
    sources: {
      sharedMemoryInput: null,
      rawInput: (model) => {
        const spec = RAW_SPECS[model];
        if (!spec) throw notFound(`Request for unknown model: '${model}' is not found`);
        return spec;
      },
      forwardHeaders: /^x-fwd/,
    },
  };
}

describe('HTTP infer decoding: hostile bodies are decoded or refused with a 4xx', () => {
  test('Inference-Header-Content-Length: any text is null, an int32 within the body, or INVALID_ARG', () => {
    const header = fc.oneof(fc.string({ maxLength: 14 }), fc.nat().map(String), fc.constantFrom('2147483647', '2147483648', '-0', '00', ' 1', '1 ', '+1'));
    fc.assert(fc.property(fc.option(header), fc.nat(2 ** 31), (value, bodyLength) => {
      const n = decodedOr4xx(() => parseHeaderLength(value ?? undefined, bodyLength));
      if (n instanceof InferenceServerError) return;
      if (value === null) expect(n).toBeNull();
      else expect(Number.isInteger(n) && n! >= 0 && n! <= Math.min(bodyLength, 2 ** 31 - 1)).toBe(true);
    }), settings(3000));
  });

  test('decodeInferRequest on hostile bodies: a call with well-formed tensors, or a 4xx error', () => {
    fc.assert(fc.property(hostileBody, fc.constantFrom(...Object.keys(RAW_SPECS), 'missing'), ({ body, headerLength }, model) => {
      const decoded = decodedOr4xx(() => {
        const length = parseHeaderLength(headerLength, body.length);
        return decodeInferRequest(body, length, decodeOptions(model, ['x-fwd-a', '1', 'other', '2']));
      });
      if (decoded instanceof InferenceServerError) return;
      for (const { tensor } of decoded.call.inputs) {
        // NDArray's constructor checks the element count; the bytes of a binary tensor lie inside the body.
        expect(tensor).toBeInstanceOf(NDArray);
        expect((tensor as NDArray).size).toBe(tensor.shape.reduce((a, b) => a * b, 1));
      }
    }), settings(1500));
  });

  test('valid requests from infernode\'s HTTP client decode to the same tensors (JSON and binary)', () => {
    const requestArb = fc.boolean().chain((binaryInputs) => fc.record({
      binaryInputs: fc.constant(binaryInputs),
      binaryOutputs: fc.boolean(),
      id: fc.option(fc.string({ maxLength: 6 })),
      inputs: namedTensors(!binaryInputs),
    }));
    fc.assert(fc.property(requestArb, ({ binaryInputs, binaryOutputs, id, inputs }) => {
      const encoded = encodeInferRequest({ modelName: 'm', id: id ?? undefined, inputs }, binaryInputs, binaryOutputs);
      const length = parseHeaderLength(encoded.headers['Inference-Header-Content-Length'] as string | undefined, encoded.body.length);
      const { call, binaryByDefault } = decodeInferRequest(encoded.body, length, decodeOptions('m'));
      expect(binaryByDefault).toBe(binaryOutputs);
      expect(call.id).toBe(id ?? undefined);
      expect(call.inputs.map((i) => i.name)).toEqual(Object.keys(inputs));
      for (const { name, tensor } of call.inputs) {
        expect({ dtype: tensor.dtype, shape: tensor.shape }).toEqual({ dtype: inputs[name].dtype, shape: inputs[name].shape });
        expect(tensor).toBeInstanceOf(NDArray);  // no shared memory here
        expect(tensorBytes(tensor as NDArray).equals(tensorBytes(inputs[name]))).toBe(true);
      }
    }), settings(800));
  });
});

// ---- the linear reader of bodies of many arrays (ts/server/http/json-scan.ts) ----

/** Number literals as clients write them, and at the edges of exactness: 17-digit doubles, exponents, -0, long integers. */
const numberText = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.tuple(fc.boolean(), fc.stringMatching(/^(0|[1-9][0-9]{0,19})$/), fc.option(fc.stringMatching(/^[0-9]{1,19}$/)),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,4}$/))))
    .map(([minus, int, frac, exp]) => `${minus ? '-' : ''}${int}${frac ? `.${frac}` : ''}${exp ? exp.join('') : ''}`),
  fc.constantFrom('-0', '-0.0', '1e22', '1e23', '9.999999999999999e22', '0.30000001192092896', '255', '256', '-129', '4294967296',
    '9007199254740993', '18446744073709551615', '18446744073709551616', '-9223372036854775809', '1e400', `1${'0'.repeat(120)}`),
);
const stringText = fc.oneof(fc.string({ maxLength: 4 }).map((t) => JSON.stringify(t)),
  fc.constantFrom('"\\u00e9"', '"a\\"b"', '"\\u0000int:5"', '"\\u0000int:12345678901234567890"', '"\\ud800"', '"[1,[2]]"', '"\x7f"', '"\\/\\b\\f\\n\\r\\t"', '"\x1f"'));
const leafText = fc.oneof({ weight: 6, arbitrary: numberText }, { weight: 2, arbitrary: stringText },
  { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null', '{}', '{"a":[1,[2]]}', '{"a":12345678901234567890}') });
const space = fc.constantFrom('', '', ' ', '\n ');

/** Data as JSON text: any nesting (ragged, mixed, empty arrays, over 100 deep), or rows of one datatype that fill the shape. */
const { dataText } = fc.letrec((tie) => ({
  dataText: fc.oneof({ depthSize: 'small' }, leafText,
    fc.tuple(fc.array(tie('dataText'), { maxLength: 4 }), space).map(([items, w]) => `[${w}${items.join(`${w},${w}`)}${w}]`)),
}));
const tooDeep = fc.integer({ min: 98, max: 102 }).map((n) => `${'['.repeat(n)}1${']'.repeat(n)}`);
const RANGE: Record<string, [number, number]> = {
  UINT8: [0, 255], INT8: [-128, 127], UINT16: [0, 65535], INT16: [-32768, 32767], UINT32: [0, 2 ** 32 - 1], INT32: [-(2 ** 31), 2 ** 31 - 1],
};
function elementOf(dtype: string): fc.Arbitrary<string> {
  if (dtype === 'BOOL') return fc.constantFrom('true', 'false');
  if (dtype === 'BYTES') return stringText;
  if (dtype === 'FP32' || dtype === 'FP64') return numberText;
  if (dtype === 'INT64') return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String);
  if (dtype === 'UINT64') return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String);
  return fc.integer({ min: RANGE[dtype][0], max: RANGE[dtype][1] }).map(String);
}
const JSON_TYPES = DATA_TYPES.filter((d) => d !== 'FP16' && d !== 'BF16');
const fittingInput = fc.constantFrom(...JSON_TYPES).chain((dtype) =>
  fc.tuple(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 3 }), fc.boolean(), space).chain(([dims, flat, w]) => {
    const n = dims.reduce((a, b) => a * b, 1);
    // Now and then an element of another kind: refused in the element's words.
    const element = fc.oneof({ weight: 30, arbitrary: elementOf(dtype) }, { weight: 1, arbitrary: leafText });
    return fc.array(element, { minLength: n, maxLength: n }).map((items) => {
      let k = 0;
      const nest = (d: number): string => (d === dims.length ? items[k++] : `[${w}${Array.from({ length: dims[d] }, () => nest(d + 1)).join(`,${w}`)}]`);
      return `{"name":"IN${dims.join('')}","datatype":"${dtype}","shape":${JSON.stringify(dims)},"data":${flat ? `[${items.join(',')}]` : nest(0)}}`;
    });
  }));
const anyInput = fc.record({
  dtype: fc.constantFrom(...DATA_TYPES, 'FP33'),
  shape: fc.oneof({ weight: 4, arbitrary: smallShape.map((d) => JSON.stringify(d)) }, fc.constantFrom('[1,-1]', '["x"]', '[4096]')),
  member: fc.constantFrom('"data":', '"data":', '"d\\u0061ta":', '"data":[1],"data":', 'none'),
  data: fc.oneof(dataText, tooDeep),
  extra: fc.constantFrom('', ',"parameters":{"binary_data_size":4}', ',"x":[1,[2]]', ',"x":12345678901234567890', ',"inputs":[{"data":[[1]]}]'),
}).map(({ dtype, shape, member, data, extra }) =>
  `{"name":"IN","datatype":"${dtype}","shape":${shape}${member === 'none' ? '' : `,${member}${data}`}${extra}}`);
const scanBody = fc.record({
  inputs: fc.array(fc.oneof(fittingInput, fittingInput, anyInput), { minLength: 1, maxLength: 3 }),
  inputsKey: fc.constantFrom('"inputs"', '"inputs"', '"\\u0069nputs"', '"inputs":[{"name":"Z","datatype":"FP32","shape":[1],"data":[[5]]}],"inputs"'),
  before: fc.constantFrom('', '"id":"r",', '"parameters":{"k":12345678901234567890,"sequence_id":18446744073709551615},', '"x":[[1],[2]],',
    '"parameters":{"data":[[1]]},', '"parameters":{"inputs":[{"data":[[1]]}]},', '"outputs":[{"name":"O","data":[[1]],"parameters":{"binary_data":true}}],',
    '"id":"\\u0000int:5","parameters":{"p":"\\u0000\\u0069nt:7"},'),
  // Now and then one character gone or one put in (never before the opening brace): mostly no longer JSON.
  edit: rarely(fc.tuple(fc.nat(), fc.constantFrom('', '', '[', ']', '{', '}', ',', ':', '"', '\\', '0', '-', '.', 'e', 'u', '\x1f', 'é'))),
}).map(({ inputs, inputsKey, before, edit }) => {
  const text = `{${before}${inputsKey}:[${inputs.join(',')}]}`;
  if (edit === null) return text;
  const at = 1 + (edit[0] % (text.length - 1));
  return text.slice(0, at) + edit[1] + text.slice(edit[1] === '' ? at + 1 : at);
});

/** What decoding a body gives: its call with tensors as bytes, or its error. */
function decodeOutcome(body: Buffer): unknown {
  const decoded = decodedOr4xx(() => decodeInferRequest(body, null, decodeOptions('m')));
  if (decoded instanceof InferenceServerError) return { code: decoded.code, message: decoded.message };
  const { inputs, ...rest } = decoded.call;
  return { ...rest, binaryByDefault: decoded.binaryByDefault, inputs: inputs.map(({ name, tensor }) => ({
    name, dtype: tensor.dtype, shape: tensor.shape, bytes: tensorBytes(tensor as NDArray).toString('hex'),
  })) };
}

describe('HTTP infer decoding: a body of many arrays is read by the scan exactly as JSON.parse reads it', () => {
  test('the same call or the same error, but for a body that is not JSON (refused by both)', () => {
    fc.assert(fc.property(scanBody, (text) => {
      // More `[` than MAX_JSON_ARRAYS, in a string of a member the decoder ignores, send the body to the scan.
      const open = /^\{\s*/.exec(text)![0].length;
      const member = `"pad":"${'['.repeat(70_000)}"${text[open] === '}' ? '' : ','}`;
      const parsed = decodeOutcome(Buffer.from(text));
      const scanned = decodeOutcome(Buffer.from(text.slice(0, open) + member + text.slice(open)));
      const notJson = { code: 'INVALID_ARG', message: expect.stringContaining("failed to parse the request JSON buffer for model 'm': ") };
      if (/failed to parse the request JSON buffer/.test((parsed as { message?: string }).message ?? '')) expect(scanned).toEqual(notJson);
      else expect(scanned).toEqual(parsed);
    }), settings(1000));
  });
});

describe('HTTP infer on a real server: hostile bodies get 200 or a 4xx JSON error, and the server stays up', () => {
  let served: Served;

  beforeAll(async () => {
    served = await serve((t) => t.bind({
      modelName: 'identity', inferFunc: echo({ OUT: 'IN' }),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    }));
  });

  afterAll(async () => {
    await served.triton.stop();
    closeAgent();
  });

  test('every hostile request is answered with a well-formed response', async () => {
    await fc.assert(fc.asyncProperty(hostileBody, fc.constantFrom('identity', 'identity', 'missing'), async ({ body, headerLength }, model) => {
      const headers: Record<string, string | number> = { 'Content-Type': 'application/octet-stream' };
      // Header values travel as latin1 on the wire; control characters would break the framing itself.
      if (headerLength !== undefined) headers['Inference-Header-Content-Length'] = headerLength.replace(/[^\x20-\x7e]/g, '');
      const reply = await rawExchange(served.port, rawPost(`/v2/models/${model}/infer`, body, headers));
      expect(reply).not.toBeNull();
      const { status, error } = reply!;
      if (status === 200) return;
      if (status < 400 || status >= 500) throw new Error(`answered ${status}: ${reply!.body.toString('utf8', 0, 300)}`);
      expect({ hasError: error.length > 0, type: reply!.headers['content-type'] }).toEqual({
        hasError: true, type: expect.stringContaining('application/json'),
      });
    }), settings(150));
    // Still serving, and still right.
    const ok = await post(served.port, '/v2/models/identity/infer', {
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }],
    });
    expect(ok.status).toBe(200);
    expect(ok.json<{ outputs: { data: number[] }[] }>().outputs[0].data).toEqual([1, 2, 3]);
  });
});
