/**
 * Cases found in a review of the reader of large JSON infer bodies (ts/server/http/json-scan.ts,
 * json-tensor-data.ts), each decoded both ways: by JSON.parse, and by the scan that a body of
 * more than 65,536 `[` (or over 16 MiB) takes. Both must give the same call or the same error
 * (test/property/http-infer.property.test.ts compares them on generated bodies), and neither may
 * throw anything but an InferenceServerError.
 */
import { InferenceServerError, notFound } from '../../../ts/errors';
import { decodeInferRequest, type InferDecodeOptions } from '../../../ts/server/http/infer-request';
import { NDArray } from '../../../ts/tensor';
import { tensorBytes } from '../../property/wire-arbitraries';

const options: InferDecodeOptions = {
  modelName: 'm',
  sources: { sharedMemoryInput: null, rawInput: () => { throw notFound('no raw input here'); }, forwardHeaders: null },
};

/** The decoded call (tensors as hex bytes) or the InferenceServerError; any other error is thrown. */
function outcome(body: Buffer): unknown {
  try {
    const { inputs, ...rest } = decodeInferRequest(body, null, options).call;
    return { ...rest, inputs: inputs.map(({ name, tensor }) => ({
      name, dtype: tensor.dtype, shape: tensor.shape, bytes: tensorBytes(tensor as NDArray).toString('hex'),
    })) };
  } catch (err) {
    if (err instanceof InferenceServerError) return { status: err.httpStatus, message: err.message };
    throw err;
  }
}

/** The outcome of `text` read by JSON.parse, and by the scan (a string of 70,000 `[` first in the object). */
function bothWays(text: string): { parsed: unknown; scanned: unknown } {
  const scanned = Buffer.from(`{"pad":"${'['.repeat(70_000)}",${text.slice(1)}`);
  return { parsed: outcome(Buffer.from(text)), scanned: outcome(scanned) };
}

const input = (datatype: string, data: string): string => `{"name":"IN","datatype":"${datatype}","shape":[1],"data":${data}}`;

describe('JSON.parse and the scan read a body alike', () => {
  test('UINT64 data of a negative number below 16 digits is refused as out of range (it wrapped to 2^64 - n)', () => {
    for (const value of ['-1', '-999999999999999', '[-1]']) {
      const { parsed, scanned } = bothWays(`{"inputs":[${input('UINT64', `[${value}]`)}]}`);
      expect(parsed).toEqual({ status: 400, message: `input 'IN' for model 'm': element 0 (${value.replace(/[[\]]/g, '')}) is out of range for datatype UINT64` });
      expect(scanned).toEqual(parsed);
    }
  });
});
