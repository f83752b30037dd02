/**
 * JS models in a repository: `<model>/<version>/model.js` (CommonJS) or `model.mjs` (ES module)
 * exporting `initialize(args)`, `execute(requests, context)` and `finalize(args)` — the Node
 * twin of Triton's Python backend, whose `TritonPythonModel` gets the same three calls per
 * instance.
 *
 * Contract:
 * - `initialize(args)` runs once per instance, one after another, before the model is ready
 *   (args.instanceIndex tells which). A throw fails the load; instances already initialized
 *   are finalized.
 * - `execute(requests, context)` runs one batch on instance `context.instanceIndex`; it returns
 *   one outputs object per request (sync or async). A decoupled model
 *   (`model_transaction_policy { decoupled: true }`) returns a generator yielding one outputs
 *   list per step, or one (async) iterable per request, or nothing and answers through each
 *   request's `responseSender` (see ts/decoupled.ts). A throw fails only that batch's requests,
 *   with the error's message; an error carrying one of Triton's status names in `code`
 *   (`INVALID_ARG`, `UNAVAILABLE`, ...) keeps that code, whichever copy of infernode made it.
 * - `finalize(args)` runs once per instance when the version is unloaded (or the server
 *   stops), after its last request, with the args its `initialize` got.
 * Module-level state is shared by the instances of one load; a reload re-reads the files.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InferenceServerError, StatusCode, toInferenceServerError, type StatusCodeName } from '../errors';
import { instanceTotal, instancesOf } from '../config/instances';
import type { NormalizedModelConfig } from '../config/normalize';
import type { InferFunc, Request, ResponseOutputs, TritonContext } from '../request';
import type { ModelDirectory } from './layout';

/** What `initialize` and `finalize` receive (Triton's Python backend `args`, camelCased). */
export interface JsModelArgs {
  modelConfig: NormalizedModelConfig;
  modelName: string;
  modelVersion: number;
  /** The repository the model was loaded from. */
  modelRepository: string;
  /** The model's directory, `<repository>/<model>` (what Python's `args['model_repository']` holds). */
  modelDirectory: string;
  /** The model's parameters (`parameters { key, value { string_value } }` of its config). */
  parameters: Record<string, string>;
  instanceIndex: number;
  /** Triton's instance name, `<group>_<c>` (Python's `args['model_instance_name']`). */
  instanceName: string;
  /** 'KIND_CPU' or 'KIND_GPU', as the load resolved its group (ts/config/instances.ts). */
  instanceKind: string;
  /** The instance's GPU; 0 on the CPU (Python's `args['model_instance_device_id']`). */
  instanceDeviceId: number;
}

/** The exports of a model.js / model.mjs. */
export interface JsModelModule {
  initialize?(args: JsModelArgs): void | Promise<void>;
  execute(requests: Request[], context: TritonContext): ResponseOutputs[] | Promise<ResponseOutputs[]>;
  finalize?(args: JsModelArgs): void | Promise<void>;
}

export interface LoadedJsModel {
  funcs: InferFunc[];
  finalize(): Promise<void>;
}

// A real dynamic import(): TypeScript's CommonJS output would turn `import()` into require(),
// which cannot load ES modules.
const dynamicImport = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<unknown>;

async function importModule(file: string): Promise<JsModelModule> {
  if (file.endsWith('.mjs')) {
    // A URL per file content, so a reload of changed code gets the new code. (ES modules stay
    // in Node's module map for the life of the process; modules it imports are not re-read.)
    const version = createHash('sha1').update(readFileSync(file)).digest('hex');
    const url = `${pathToFileURL(file).href}?v=${version}`;
    const mod = (await dynamicImport(url)) as JsModelModule & { default?: JsModelModule };
    return typeof mod.execute === 'function' ? mod : mod.default ?? mod;
  }
  const resolved = require.resolve(file);
  // A reload re-reads the model file and the files it requires from its version directory.
  const versionDir = path.dirname(resolved) + path.sep;
  for (const key of Object.keys(require.cache)) if (key.startsWith(versionDir)) delete require.cache[key];
  // require() also lists each module it loads in this module's `children`, which kept every
  // reloaded model's module and code alive after it left the cache (the soak: ~200 in 400 s).
  module.children = module.children.filter((child) => !child.filename.startsWith(versionDir));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(resolved) as JsModelModule & { default?: JsModelModule };
  return typeof mod.execute === 'function' ? mod : mod.default ?? mod;
}

/** An error thrown by model code, with its Triton status kept when it names one. */
function modelError(err: unknown): InferenceServerError {
  if (err instanceof InferenceServerError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code in StatusCode && err instanceof Object && 'message' in err) {
    return new InferenceServerError(code as StatusCodeName, String((err as Error).message));
  }
  return toInferenceServerError(err);
}

/** Re-yields an iterable's items; what its iteration throws gets modelError's status. */
async function* mappingErrors(iterable: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<unknown> {
  try {
    yield* iterable;
  } catch (err) {
    throw modelError(err);
  }
}

function isIterable(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) &&
    (Symbol.asyncIterator in value || Symbol.iterator in value);
}

/**
 * What a decoupled model's execute returned, with modelError's statuses for errors its
 * iterables throw: a generator of per-step lists, or one iterable per request (anything else,
 * such as nothing when it answers through request.responseSender, as it is).
 */
function streamingErrors(result: unknown): unknown {
  if (isIterable(result)) return mappingErrors(result);
  if (Array.isArray(result) && result.every(isIterable)) return result.map((it) => mappingErrors(it));
  return result;
}

/** Imports the model file and initializes one instance per count. */
export async function loadJsModel(file: string, config: NormalizedModelConfig, dir: ModelDirectory): Promise<LoadedJsModel> {
  const where = `model '${config.name}' version ${config.version}`;
  let mod: JsModelModule;
  try {
    mod = await importModule(file);
  } catch (err) {
    throw new InferenceServerError('INVALID_ARG', `${where}: cannot load ${file}: ${(err as Error).message}`);
  }
  if (!mod || typeof mod.execute !== 'function') {
    throw new InferenceServerError('INVALID_ARG', `${where}: ${file} must export an execute(requests, context) function`);
  }
  for (const hook of ['initialize', 'finalize'] as const) {
    if (mod[hook] !== undefined && typeof mod[hook] !== 'function') {
      throw new InferenceServerError('INVALID_ARG', `${where}: ${file} exports ${hook}, but it is not a function`);
    }
  }
  const count = instanceTotal(config.instanceGroup) || 1;
  const instances = instancesOf(config.name, config.instanceGroup);
  const argsOf = (i: number): JsModelArgs => ({
    modelConfig: config, modelName: config.name, modelVersion: config.version,
    modelRepository: dir.repository, modelDirectory: dir.dir, parameters: { ...(config.parameters ?? {}) },
    instanceIndex: i, instanceName: instances[i]?.name ?? `${config.name}_${i}`, instanceKind: instances[i]?.kind ?? 'KIND_CPU',
    instanceDeviceId: instances[i]?.device ?? 0,
  });
  const initialized: JsModelArgs[] = [];
  const finalize = async (): Promise<void> => {
    // Every instance is finalized, even when one finalize throws; the first error is reported.
    let first: unknown;
    for (const args of initialized.splice(0)) {
      try {
        await mod.finalize?.(args);
      } catch (err) {
        first ??= err;
      }
    }
    if (first !== undefined) throw new InferenceServerError('INTERNAL', `${where}: finalize failed: ${modelError(first).message}`);
  };
  for (let i = 0; i < count; i++) {
    const args = argsOf(i);
    try {
      await mod.initialize?.(args);
    } catch (err) {
      await finalize().catch(() => undefined);
      throw new InferenceServerError(modelError(err).code === 'INTERNAL' ? 'INVALID_ARG' : modelError(err).code,
        `${where}: initialize of instance ${i} failed: ${modelError(err).message}`);
    }
    initialized.push(args);
  }
  const execute: InferFunc = (requests, context) => {
    let result: ResponseOutputs[] | Promise<ResponseOutputs[]>;
    try {
      result = mod.execute(requests, context);
    } catch (err) {
      throw modelError(err);
    }
    if (!config.decoupled) return result instanceof Promise ? result.catch((err: unknown) => { throw modelError(err); }) : result;
    return Promise.resolve(result).then(streamingErrors, (err: unknown) => { throw modelError(err); }) as never;
  };
  return { funcs: Array.from({ length: count }, () => execute), finalize };
}
