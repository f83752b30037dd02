/**
 * The crashes the property suites found, kept as plain regression tests (the corpus is the code
 * that builds each input, so it stays small however large the input is):
 *
 * 1. Values nested thousands of levels deep (2 bytes a level, far inside any body limit) in a
 *    field whose error message quoted the value with JSON.stringify/String(): RangeError (stack
 *    overflow) while building the message, so HTTP answered 500 and logged an internal error
 *    with a stack, for every such request. Now INVALID_ARG (400) with a bounded quote.
 * 2. A gRPC request parameter named `__proto__`, `constructor` or `toString` looked up Triton's
 *    reserved-parameter table as a plain object and found Object.prototype's members: TypeError,
 *    gRPC INTERNAL. Now it is a custom parameter like any other.
 * 3. A request parameter named `__proto__` was assigned to the custom parameters with `=`,
 *    which sets the prototype (a scalar is silently dropped): the model never saw it.
 */
import { Metadata } from '@grpc/grpc-js';
import { inferRequestFields } from '../../ts/client/grpc-convert';
import { validateModelConfigJson } from '../../ts/config/pbtxt';
import { InferenceServerError } from '../../ts/errors';
import { decodeInferRequest as decodeGrpc } from '../../ts/server/grpc/infer-codec';
import { encodeInferRequest } from '../../ts/server/grpc/infer-encode';
import { inferenceCall } from '../../ts/server/grpc/infer-request';
import { DisconnectSignal } from '../../ts/server/http/disconnect';
import { decodeInferRequest } from '../../ts/server/http/infer-request';
import { splitRequestParameters } from '../../ts/server/parameters';
import { NDArray } from '../../ts/tensor';
import { inProcessTriton } from '../integration/helpers';
import { closeAgent, echo, post, serve, type Served } from '../integration/http/http-helpers';

const DEPTH = 50_000;
const deepArray = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
const deepObject = `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`;

/** Every field whose error message quotes the client's value, with a deep value in it. */
const DEEP_BODIES: [string, string][] = [
  ['datatype', `{"inputs":[{"name":"IN","datatype":${deepArray},"shape":[1],"data":[1]}]}`],
  ['shape dimension', `{"inputs":[{"name":"IN","datatype":"FP32","shape":[${deepArray}],"data":[1]}]}`],
  ['FP32 data element', `{"inputs":[{"name":"IN","datatype":"FP32","shape":[1],"data":[${deepObject}]}]}`],
  ['BYTES data element', `{"inputs":[{"name":"IN","datatype":"BYTES","shape":[1],"data":[${deepObject}]}]}`],
  ['BOOL data element', `{"inputs":[{"name":"IN","datatype":"BOOL","shape":[1],"data":[${deepObject}]}]}`],
  ['binary_data_size', `{"inputs":[{"name":"IN","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":${deepArray}}}]}`],
  ['shared_memory_offset', `{"inputs":[{"name":"IN","datatype":"FP32","shape":[1],"parameters":{"shared_memory_region":"r","shared_memory_byte_size":4,"shared_memory_offset":${deepArray}}}]}`],
  ['output classification', `{"inputs":[],"outputs":[{"name":"OUT","parameters":{"classification":${deepArray}}}]}`],
  ['request priority', `{"inputs":[],"parameters":{"priority":${deepArray}}}`],
];

const HTTP_OPTIONS = {
  modelName: 'identity',
  sources: {
    sharedMemoryInput: null,
    rawInput: () => { throw new Error('not a raw request'); },
    forwardHeaders: null,
  },
};

describe('values nested 50k deep are INVALID_ARG, not a stack overflow', () => {
  test.each(DEEP_BODIES)('HTTP decoding: %s', (_, body) => {
    let error: unknown;
    try {
      decodeInferRequest(Buffer.from(body), null, HTTP_OPTIONS);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InferenceServerError);
    expect((error as InferenceServerError).code).toBe('INVALID_ARG');
    expect((error as InferenceServerError).message.length).toBeLessThan(400);
  });

  test('a load API config with a deep value', () => {
    expect(() => validateModelConfigJson({ max_batch_size: JSON.parse(deepArray) })).toThrow(/expected an integer \(int32\), got \[\[\[\[\.\.\.\]\]\]\]/);
  });

  test('request parameters with a deep value', () => {
    expect(() => splitRequestParameters({ timeout: JSON.parse(deepArray) })).toThrow(InferenceServerError);
  });

  describe('through a real HTTP server', () => {
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

    test.each(DEEP_BODIES)('%s: 400 with a JSON error', async (_, body) => {
      const reply = await post(served.port, '/v2/models/identity/infer', body, { 'Content-Type': 'application/json' });
      expect({ status: reply.status, error: reply.error.length > 0 }).toEqual({ status: 400, error: true });
    });
  });
});

describe('parameter keys that name Object.prototype members', () => {
  const KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

  test.each(KEYS)('gRPC: a request parameter %s is a custom parameter, not an INTERNAL error', async (key) => {
    const triton = inProcessTriton();
    await triton.run();
    try {
      const params = Object.defineProperty({}, key, { value: 'v', enumerable: true });
      const buf = encodeInferRequest(inferRequestFields({ modelName: 'm', inputs: { IN: new NDArray('INT32', [1], Int32Array.of(1)) }, parameters: params }));
      const call = inferenceCall(triton.server!, decodeGrpc(buf), {
        metadata: new Metadata(), forwardPattern: null, deadline: Infinity, signal: new DisconnectSignal(),
      });
      expect(Object.getOwnPropertyDescriptor(call.parameters.custom, key)?.value).toBe('v');
    } finally {
      await triton.stop();
    }
  });

  test('HTTP: a request parameter __proto__ reaches the custom parameters as an own key', () => {
    const body = '{"inputs":[],"parameters":{"__proto__":"v","x":1}}';
    const { call } = decodeInferRequest(Buffer.from(body), null, HTTP_OPTIONS);
    expect(Object.getOwnPropertyDescriptor(call.parameters.custom, '__proto__')?.value).toBe('v');
    expect(Object.getPrototypeOf(call.parameters.custom)).toBe(Object.prototype);
    expect(call.parameters.custom.x).toBe(1);
  });

});
