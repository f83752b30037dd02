/**
 * Loads infernode's .proto files (ts/server/grpc/proto/) with @grpc/proto-loader and builds the
 * grpc-js service definitions the server, the client and the bench's echo server share. The
 * inference methods get the hand-written codec (infer-codec.ts / infer-encode.ts); every other
 * method uses protobufjs through proto-loader.
 *
 * The .proto files are not compiled by tsc, so they stay where they ship (`ts/` is in the
 * package's files) and are found relative to this module both from `ts/server/grpc/` (ts-jest)
 * and from `lib/server/grpc/` (the compiled package).
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import { InferenceServerError } from '../../errors';
import { decodeInferRequest, decodeInferResponse, decodeStreamResponse } from './infer-codec';
import { encodeInferResponse, encodeStreamResponse } from './infer-encode';

/** Directory holding grpc_service.proto, model_config.proto and health.proto. */
export function protoDirectory(): string {
  const candidates = [
    path.join(__dirname, 'proto'),
    path.join(__dirname, '..', '..', '..', 'ts', 'server', 'grpc', 'proto'),
  ];
  const found = candidates.find((dir) => existsSync(path.join(dir, 'grpc_service.proto')));
  if (!found) throw new Error(`infernode: grpc_service.proto not found (looked in ${candidates.join(', ')})`);
  return found;
}

/**
 * How decoded messages look. The server reads 64-bit integers as strings (exact; its checks
 * accept digit strings); the client reads them as numbers, as the HTTP client's JSON does,
 * except in ModelConfig (`clientServiceDefinition`).
 */
const COMMON: Options = { keepCase: true, enums: String, defaults: true, arrays: true, objects: true, oneofs: true };
export const SERVER_OPTIONS: Options = { ...COMMON, longs: String };
export const CLIENT_OPTIONS: Options = { ...COMMON, longs: Number };

const cache = new Map<string, PackageDefinition>();

/** The package definition of the three files under the given decoding options (cached). */
export function packageDefinition(options: Options): PackageDefinition {
  const key = JSON.stringify(options, (_k, v: unknown) => (typeof v === 'function' ? v.name : v));
  let def = cache.get(key);
  if (!def) {
    def = loadSync(['grpc_service.proto', 'health.proto'], { ...options, includeDirs: [protoDirectory()] });
    cache.set(key, def);
  }
  return def;
}

export const INFERENCE_SERVICE = 'inference.GRPCInferenceService';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';

type AnyMethod = MethodDefinition<unknown, unknown>;

function service(def: PackageDefinition, name: string): Record<string, AnyMethod> {
  return def[name] as unknown as Record<string, AnyMethod>;
}

/**
 * The inference service with the hot-path codec on ModelInfer and ModelStreamInfer: requests
 * decode to `InferRequestMessage`, responses encode from `InferResponseFields` (server side);
 * the client sends pre-encoded request Buffers and decodes responses the same way.
 */
export function inferenceServiceDefinition(options: Options): ServiceDefinition {
  const methods = { ...service(packageDefinition(options), INFERENCE_SERVICE) };
  methods.ModelInfer = {
    ...methods.ModelInfer,
    requestSerialize: (b: unknown) => b as Buffer,
    requestDeserialize: decodeInferRequest,
    responseSerialize: encodeInferResponse as (value: unknown) => Buffer,
    responseDeserialize: decodeInferResponse,
  };
  methods.ModelStreamInfer = {
    ...methods.ModelStreamInfer,
    requestSerialize: (b: unknown) => b as Buffer,
    requestDeserialize: decodeInferRequest,
    responseSerialize: encodeStreamResponse as (value: unknown) => Buffer,
    responseDeserialize: decodeStreamResponse,
  };
  return methods as ServiceDefinition;
}

/**
 * The inference service as the client decodes it: 64-bit integers as numbers (CLIENT_OPTIONS),
 * but ModelConfig's as exact digit strings (SERVER_OPTIONS): a config's uint64 fields take any
 * value up to 2^64 - 1 (Triton's qa/L0_config_json `priority_levels: 18446744073709551615`),
 * which a number rounds; grpc-convert's `modelConfigJson` makes them numbers or BigInts, as the
 * HTTP client's getModelConfig gives them. The other 64-bit values stay numbers, as the HTTP
 * client's JSON.parse gives them: metadata shapes and shared-memory sizes cannot pass 2^53 (no
 * tensor or region is that large), and the statistics are measured totals (counts, ns), where
 * rounding past 2^53 (104 days of summed ns) is off by less than one part in 2^53.
 */
export function clientServiceDefinition(): ServiceDefinition {
  const methods = inferenceServiceDefinition(CLIENT_OPTIONS) as Record<string, AnyMethod>;
  methods.ModelConfig = service(packageDefinition(SERVER_OPTIONS), INFERENCE_SERVICE).ModelConfig;
  return methods as ServiceDefinition;
}

/** grpc.health.v1.Health. */
export function healthServiceDefinition(options: Options): ServiceDefinition {
  return service(packageDefinition(options), HEALTH_SERVICE) as ServiceDefinition;
}

/** What a server handler receives instead of a request that did not decode. */
export interface DecodeFailure {
  decodeError: InferenceServerError;
}

export function isDecodeFailure(value: unknown): value is DecodeFailure {
  return typeof value === 'object' && value !== null && 'decodeError' in value;
}

/**
 * A service definition for a server: a request that fails to decode reaches the handler as a
 * DecodeFailure, so the client gets INVALID_ARGUMENT with the reason (grpc-js itself would answer
 * INTERNAL "Error deserializing request", which blames the server for the client's bytes).
 */
export function forServer(definition: ServiceDefinition): ServiceDefinition {
  const out: Record<string, AnyMethod> = {};
  for (const [name, method] of Object.entries(definition as Record<string, AnyMethod>)) {
    const decode = method.requestDeserialize;
    out[name] = {
      ...method,
      requestDeserialize: (buf: Buffer): unknown => {
        try {
          return decode(buf);
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          const decodeError = err instanceof InferenceServerError
            ? err : new InferenceServerError('INVALID_ARG', `malformed ${method.path.split('/').pop() ?? ''} request: ${reason}`);
          return { decodeError } satisfies DecodeFailure;
        }
      },
    };
  }
  return out as ServiceDefinition;
}
