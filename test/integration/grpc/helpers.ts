/**
 * Shared pieces of the gRPC suites: a real Triton serving bound JS models on a free gRPC port
 * (no HTTP, no metrics: suites run in parallel), a raw grpc-js client built from infernode's
 * .proto with proto-loader (so requests are encoded by protobufjs, independently of infernode's
 * own codec), and helpers to call it and assert on gRPC statuses.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as path from 'node:path';
import { Triton } from '../../../ts/triton';
import type { TritonConfig } from '../../../ts/config/types';
import type { Request } from '../../../ts/request';
import { NDArray } from '../../../ts/tensor';

export const PROTO_DIR = path.join(__dirname, '..', '..', '..', 'ts', 'server', 'grpc', 'proto');

/** A proto-loader package definition of the project's .proto (typed contents, 64-bit as strings). */
export function loadProto(): protoLoader.PackageDefinition {
  return protoLoader.loadSync(['grpc_service.proto', 'health.proto'], {
    includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: true, arrays: true, objects: true, oneofs: true,
  });
}

type Callback = (err: grpc.ServiceError | null, value?: Record<string, unknown>) => void;
/** A generic stub: every RPC as `stub.Rpc(request, metadata, options, callback)`. */
export type Stub = grpc.Client & Record<string, (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: Callback) => grpc.ClientUnaryCall>
  & { ModelStreamInfer(md?: grpc.Metadata): grpc.ClientDuplexStream<unknown, Record<string, unknown>> };

const MAX = 2 ** 31 - 1;

export function rawStub(port: number, service = 'inference.GRPCInferenceService', options: grpc.ChannelOptions = {}): Stub {
  const pkg = grpc.loadPackageDefinition(loadProto());
  const Ctor = service.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], pkg) as grpc.ServiceClientConstructor;
  return new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX, 'grpc.max_send_message_length': MAX, ...options,
  }) as unknown as Stub;
}

/** Calls a unary RPC; resolves with the response or the ServiceError (never rejects). */
export function unary(stub: Stub, rpc: string, request: unknown, headers: Record<string, string> = {}, options: grpc.CallOptions = {})
  : Promise<{ response?: Record<string, unknown>; error?: grpc.ServiceError }> {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  return new Promise((resolve) => {
    stub[rpc](request, md, options, (err, value) => resolve(err ? { error: err } : { response: value }));
  });
}

/** Calls a unary RPC that must succeed. */
export async function ok(stub: Stub, rpc: string, request: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { response, error } = await unary(stub, rpc, request, headers);
  if (error) throw new Error(`${rpc} failed: ${error.code} ${error.details}`);
  return response!;
}

/** Calls a unary RPC that must fail with `code`, its message matching `details`. */
export async function fails(
  stub: Stub, rpc: string, request: unknown, code: grpc.status, details: string | RegExp, headers: Record<string, string> = {},
): Promise<grpc.ServiceError> {
  const { error } = await unary(stub, rpc, request, headers);
  expect(error).toBeDefined();
  expect({ code: error!.code, details: error!.details }).toEqual({
    code, details: typeof details === 'string' ? expect.stringContaining(details) : expect.stringMatching(details),
  });
  return error!;
}

/** An identity callable: every input named IN* comes back as OUT*. */
export const identity = (requests: Request[]) => requests.map((r) => {
  const out: Record<string, NDArray> = {};
  for (const [name, arr] of Object.entries(r.data)) out[name.replace(/^IN/, 'OUT')] = arr;
  return out;
});

/** A Triton with only the gRPC frontend, on a free port (quiet log). */
export function grpcTriton(config: TritonConfig = {}): Triton {
  return new Triton({
    config: { allowHttp: false, allowMetrics: false, grpcPort: 0, grpcAddress: '127.0.0.1', logInfo: false, ...config },
  });
}

/** A running server with a raw stub connected to it. */
export interface Served {
  triton: Triton;
  port: number;
  stub: Stub;
  close(): Promise<void>;
}

/** Starts a gRPC-only Triton with `bind` applied, and connects a raw stub. */
export async function serve(bind: (t: Triton) => void = bindStandardModels, config: TritonConfig = {}): Promise<Served> {
  const triton = grpcTriton(config);
  bind(triton);
  await triton.run();
  const port = triton.ports.grpc!;
  const stub = rawStub(port);
  return {
    triton, port, stub,
    close: async () => {
      stub.close();
      await triton.stop();
    },
  };
}

/** Binds the models most suites use: `identity` (FP32 [-1, -1], batched), `strings` (BYTES), `nobatch` (INT32 [4]). */
export function bindStandardModels(triton: Triton): void {
  triton.bind({
    modelName: 'identity', inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 64 },
  });
  triton.bind({
    modelName: 'strings', inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'BYTES', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'BYTES', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'nobatch', inferFunc: identity,
    inputs: [{ name: 'IN', dtype: 'INT32', shape: [4] }], outputs: [{ name: 'OUT', dtype: 'INT32', shape: [4] }],
    config: { batching: false },
  });
}

/** Little-endian bytes of FP32 values. */
export function fp32Bytes(values: number[]): Buffer {
  return Buffer.from(new Float32Array(values).buffer);
}

export function fp32(values: number[], shape = [1, values.length]): NDArray {
  return new NDArray('FP32', shape, new Float32Array(values));
}
