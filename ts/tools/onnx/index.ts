/**
 * infernode's ONNX writer: a protobuf encoder for ONNX models, so example, test and benchmark
 * models are made by the project itself (no Python). `scripts/make-models.js` is its CLI.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export * from './protobuf';
export * from './model';
export * from './factories';

/** Writes model bytes to `file`, creating its directory; returns the number of bytes written. */
export function writeModelFile(file: string, bytes: Uint8Array): number {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  return bytes.byteLength;
}
