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

  test('a string that spells the parser\'s mark of a long integer stays a string outside tensor data', () => {
    // A long literal in the data made JSON.parse's path take every mark-like string of the
    // header for a number ('id' refused, a parameter turned into 5); the scan, whose header has
    // no data, left them as strings. "\u0069" spells the same 'i'.
    const body = `{"id":"\\u0000int:5","parameters":{"p":"\\u0000\\u0069nt:7","q":12345678901234567890},` +
      `"inputs":[${input('INT64', '[1234567890123456789]')}]}`;
    const { parsed, scanned } = bothWays(body);
    expect(parsed).toMatchObject({
      id: '\u0000int:5',
      parameters: { custom: { p: '\u0000int:7', q: 12345678901234567000 } },
      inputs: [{ name: 'IN', dtype: 'INT64', bytes: Buffer.from(BigInt64Array.of(1234567890123456789n).buffer).toString('hex') }],
    });
    expect(scanned).toEqual(parsed);
  });
});

test("a string in numeric tensor data spelled like the parser's mark of a long integer is refused as a string (it was read as 5)", () => {
  for (const datatype of ['FP32', 'INT64', 'UINT64']) {
    const { parsed, scanned } = bothWays(`{"inputs":[${input(datatype, '["\\u0000int:5"]')}]}`);
    expect(parsed).toEqual({ status: 400, message: `input 'IN' for model 'm': element 0 is "\\u0000int:5", expected a number for datatype ${datatype}` });
    expect(scanned).toEqual(parsed);
  }
});

describe('a JSON body longer than V8\'s longest string (2^29 - 24 characters, with --http-max-input-size raised)', () => {
  /** `head`, then spaces to past 512 MiB, then `tail`: ~540 MB, written at once. */
  function huge(head: string, tail: string): Buffer {
    const body = Buffer.alloc(head.length + (1 << 29) + tail.length, 0x20);
    body.write(head, 0, 'latin1');
    body.write(tail, body.length - tail.length, 'latin1');
    return body;
  }

  test('numeric data are read whatever their digits; data read as a string are refused with a 400, not a 500', () => {
    // The data's text was decoded to one string for the first number of 17 digits: an Error of
    // code ERR_STRING_TOO_LONG (answered 500) where data of `0.5` were read.
    const doubles = outcome(huge(`{"inputs":[${input('FP64', '[0.12345678901234567').slice(0, -1)}`, ']}]}'));
    expect(doubles).toMatchObject({ inputs: [{ dtype: 'FP64', shape: [1], bytes: Buffer.from(Float64Array.of(0.12345678901234567).buffer).toString('hex') }] });
    // BYTES data are one JSON.parse of their text, as in JSON.parse's path, which refuses the body.
    expect(outcome(huge(`{"inputs":[${input('BYTES', '["a"').slice(0, -1)}`, ']}]}'))).toEqual({
      status: 400, message: "failed to parse the request JSON buffer for model 'm': Cannot create a string longer than 0x1fffffe8 characters",
    });
  }, 120_000);

  test('numbers the scan cuts from the text a window (1 MiB) at a time are read alike across windows', () => {
    // 17-digit doubles and long integers of every length, so that numbers straddle each window's end.
    const doubles: string[] = [];
    const longs: string[] = [];
    for (let k = 0; k < 120_000; k++) {
      doubles.push(String((k * 0.7390851332151607) % 1 - 0.5));
      longs.push(String(-(10n ** BigInt(15 + (k % 4))) - BigInt(k) * 7919n));
    }
    const inputs = `{"name":"D","datatype":"FP64","shape":[${doubles.length}],"data":[${doubles.join(',')}]},` +
      `{"name":"L","datatype":"INT64","shape":[${longs.length}],"data":[${longs.join(', ')}]}`;
    const { parsed, scanned } = bothWays(`{"inputs":[${inputs}]}`);
    expect(parsed).toMatchObject({ inputs: [{ name: 'D' }, { name: 'L' }] });
    expect(scanned).toEqual(parsed);
  });
});
