/**
 * Every RPC of GRPCInferenceService besides inference, and grpc.health.v1.Health/Check. The
 * answers are the objects the shared server code builds (metadata.ts, statistics, the model
 * config's JSON form), which already use the proto's field names, encoded by proto-loader.
 * Requests arrive decoded with 64-bit integers as strings (exact), enums by name, oneofs named.
 */
import type { ServerUnaryCall, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import { invalidArg } from '../../errors';
import { toModelConfigMessage } from '../../config/model-config-json';
import type { ServerContext } from '../context';
import { resolveModel } from '../inference-service';
import { modelMetadata, modelReady, serverMetadata, statistics } from '../metadata';
import type { ApiGroup } from '../restrictions';
import { decodeRefusal, refusal, statusOf } from './call-status';
import { logSettingsRequest, logSettingsResponse, traceSettingsRequest, traceSettingsResponse } from './settings';

/** A proto-loader-decoded request. */
type Req = Record<string, unknown>;
type Handler = (request: Req) => unknown;

/** Which restricted-protocol group each RPC belongs to (Triton's RestrictedCategory). */
export const RPC_GROUPS: Record<string, ApiGroup> = {
  ServerLive: 'health', ServerReady: 'health', ModelReady: 'health',
  ServerMetadata: 'metadata', ModelMetadata: 'metadata',
  ModelInfer: 'inference', ModelStreamInfer: 'inference',
  ModelConfig: 'model-config', ModelStatistics: 'statistics',
  RepositoryIndex: 'model-repository', RepositoryModelLoad: 'model-repository', RepositoryModelUnload: 'model-repository',
  SystemSharedMemoryStatus: 'shared-memory', SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory', CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory', CudaSharedMemoryUnregister: 'shared-memory',
  TraceSetting: 'trace', LogSettings: 'logging',
};

/** A unary handler: refusal checks, then `fn`, its result or error answered once. */
function unary(ctx: ServerContext, group: ApiGroup, fn: Handler) {
  return (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>): void => {
    const refused = refusal(ctx, group, call.metadata) ?? decodeRefusal(ctx, call.request);
    if (refused) {
      callback(refused);
      return;
    }
    new Promise((resolve) => resolve(fn(call.request as Req))).then(
      (response) => callback(null, response),
      (err: unknown) => callback(statusOf(ctx, err)),
    );
  };
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The load API's parameters: `config` (JSON text) and `file:<path>` (bytes). */
function loadOverride(parameters: unknown): { config?: string; files?: Record<string, Buffer> } {
  const out: { config?: string; files?: Record<string, Buffer> } = {};
  for (const [key, p] of Object.entries((parameters ?? {}) as Record<string, Req>)) {
    const choice = p.parameter_choice;
    if (key === 'config') {
      if (choice !== 'string_param') throw invalidArg(`load parameter 'config' must be a string_param holding JSON`);
      out.config = str(p.string_param);
    } else if (key.startsWith('file:')) {
      if (choice !== 'bytes_param') throw invalidArg(`load parameter '${key}' must be a bytes_param`);
      (out.files ??= {})[key.slice('file:'.length)] = p.bytes_param as Buffer;
    }
    // Other keys (unload_dependents, ...) do not change what infernode does.
  }
  return out;
}

function inferenceRpcs(ctx: ServerContext): Record<string, Handler> {
  const triton = ctx.triton;
  return {
    ServerLive: () => ({ live: true }),
    ServerReady: () => ({ ready: triton.isReady() && !ctx.exiting }),
    ModelReady: (r) => ({ ready: !ctx.exiting && modelReady(triton, str(r.name), str(r.version)) }),
    ServerMetadata: () => serverMetadata(triton),
    ModelMetadata: (r) => modelMetadata(triton, str(r.name), str(r.version)),
    ModelConfig: (r) => ({ config: toModelConfigMessage(resolveModel(triton, str(r.name), str(r.version)).config) }),
    ModelStatistics: (r) => statistics(triton, str(r.name) || undefined, str(r.version) || undefined),
    RepositoryIndex: (r) => ({ models: triton.repositoryIndex(r.ready === true) }),
    RepositoryModelLoad: async (r) => {
      await triton.loadModel(str(r.model_name), loadOverride(r.parameters));
      return {};
    },
    RepositoryModelUnload: async (r) => {
      await triton.unloadModel(str(r.model_name));
      return {};
    },
  };
}

function sharedMemoryRpcs(ctx: ServerContext): Record<string, Handler> {
  const shm = ctx.sharedMemory;
  return {
    SystemSharedMemoryStatus: (r) => ({
      regions: Object.fromEntries(shm.systemStatus(str(r.name) || undefined).map((s) => [s.name, {
        name: s.name, key: s.key, offset: s.offset, byte_size: s.byteSize,
      }])),
    }),
    SystemSharedMemoryRegister: (r) => {
      shm.registerSystem(r.name, r.key, r.offset, r.byte_size);
      return {};
    },
    SystemSharedMemoryUnregister: (r) => {
      shm.unregister('system', str(r.name) || undefined);
      return {};
    },
    CudaSharedMemoryStatus: (r) => ({
      regions: Object.fromEntries(shm.cudaStatus(str(r.name) || undefined).map((s) => [s.name, {
        name: s.name, device_id: s.deviceId, byte_size: s.byteSize,
      }])),
    }),
    CudaSharedMemoryRegister: (r) => {
      shm.registerCuda(r.name, r.raw_handle as Buffer, r.device_id, r.byte_size);
      return {};
    },
    CudaSharedMemoryUnregister: (r) => {
      shm.unregister('cuda', str(r.name) || undefined);
      return {};
    },
  };
}

function settingsRpcs(ctx: ServerContext): Record<string, Handler> {
  return {
    TraceSetting: (r) => {
      const model = str(r.model_name) || undefined;
      // Per-model settings exist only for models the server knows (NOT_FOUND otherwise, as HTTP):
      // no tracer state per unknown name.
      if (model) resolveModel(ctx.triton, model);
      const changes = traceSettingsRequest(r.settings);
      const settings = Object.keys(changes).length ? ctx.tracer.update(changes, model) : ctx.tracer.settings(model);
      return { settings: traceSettingsResponse(settings) };
    },
    LogSettings: (r) => {
      const changes = logSettingsRequest(r.settings);
      const settings = Object.keys(changes).length ? ctx.logger.update(changes) : ctx.logger.settings;
      return { settings: logSettingsResponse(settings) };
    },
  };
}

/** The GRPCInferenceService implementation, minus ModelInfer/ModelStreamInfer (infer-handlers.ts). */
export function serviceHandlers(ctx: ServerContext): UntypedServiceImplementation {
  const rpcs = { ...inferenceRpcs(ctx), ...sharedMemoryRpcs(ctx), ...settingsRpcs(ctx) };
  const out: UntypedServiceImplementation = {};
  for (const [name, fn] of Object.entries(rpcs)) out[name] = unary(ctx, RPC_GROUPS[name], fn);
  return out;
}

/** grpc.health.v1.Health/Check: SERVING while the server is ready (group 'health'). */
export function healthHandlers(ctx: ServerContext): UntypedServiceImplementation {
  return {
    Check: unary(ctx, 'health', () => ({
      status: ctx.triton.isReady() && !ctx.exiting ? 'SERVING' : 'NOT_SERVING',
    })),
  };
}
