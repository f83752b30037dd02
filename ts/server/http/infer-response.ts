/**
 * Encoding an infer answer as Triton's HTTP frontend does (triton-protocol.md §1.3-1.4):
 * `{"model_name", "model_version", "id"?, "outputs": [...]}`, outputs in binary or JSON by
 * Triton's code rules (not its docs): an output the request listed is binary only when its own
 * `binary_data` is true; an output it did not list follows `binary_data_output` (raw binary
 * requests: always binary). With any binary output the body is the JSON header followed by the
 * raw outputs, `Content-Type: application/octet-stream` and `Inference-Header-Content-Length`;
 * otherwise `Content-Type: application/json`.
 *
 * The JSON text is written directly (no object built and stringified); binary outputs are views
 * of the model's output memory, copied once into the response buffer when small.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import type { AnsweredOutput, InferenceAnswer } from '../inference-service';
import { tensorToBytes, tensorToJsonText } from '../tensor-codec';

export interface EncodedInfer {
  headers: OutgoingHttpHeaders;
  /**
   * The response body: JSON header, then binary outputs — one buffer when small; the header
   * and views of the outputs when large (written together with one writev, not copied).
   */
  body: Buffer | Buffer[];
}

/** Binary outputs up to this size are copied into one buffer; larger ones go out as views. */
const COPY_LIMIT = 64 * 1024;

const quote = JSON.stringify;

function isBinary(output: AnsweredOutput, binaryByDefault: boolean): boolean {
  return output.request ? output.request.binaryData === true : binaryByDefault;
}

/** Encodes an answer; `binaryByDefault` decides the outputs the request did not list. */
export function encodeInferResponse(answer: InferenceAnswer, binaryByDefault: boolean): EncodedInfer {
  let json = `{"model_name":${quote(answer.modelName)},"model_version":${quote(answer.modelVersion)}`;
  if (answer.id !== undefined) json += `,"id":${quote(answer.id)}`;
  json += ',"outputs":[';
  const binaries: Buffer[] = [];
  let binarySize = 0;
  for (let i = 0; i < answer.outputs.length; i++) {
    const output = answer.outputs[i];
    if (i > 0) json += ',';
    json += `{"name":${quote(output.name)},"datatype":"${output.datatype}","shape":[${output.shape.join(',')}]`;
    if (output.shm) {
      json += `,"parameters":{"shared_memory_region":${quote(output.shm.region)},` +
        `"shared_memory_byte_size":${output.shm.byteSize}` +
        (output.shm.offset ? `,"shared_memory_offset":${output.shm.offset}` : '') + '}}';
    } else if (isBinary(output, binaryByDefault)) {
      const bytes = tensorToBytes(output.data!);
      binaries.push(bytes);
      binarySize += bytes.length;
      json += `,"parameters":{"binary_data_size":${bytes.length}}}`;
    } else {
      json += `,"data":${tensorToJsonText(output.data!, `output '${output.name}' of model '${answer.modelName}'`)}}`;
    }
  }
  json += ']}';
  if (binaries.length === 0) {
    return { headers: { 'Content-Type': 'application/json' }, body: Buffer.from(json, 'utf8') };
  }
  const jsonLength = Buffer.byteLength(json, 'utf8');
  const headers = { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': jsonLength };
  if (binarySize > COPY_LIMIT) return { headers, body: [Buffer.from(json, 'utf8'), ...binaries] };
  const body = Buffer.allocUnsafe(jsonLength + binarySize);
  body.write(json, 0, 'utf8');
  let offset = jsonLength;
  for (const bytes of binaries) {
    body.set(bytes, offset);
    offset += bytes.length;
  }
  return { headers, body };
}
