/**
 * JS models in a repository: `<model>/<version>/model.js` (CommonJS) or `model.mjs` (ES module)
 * exporting `initialize(args)`, `execute(requests, context)` and `finalize()` — the Node twin of
 * Triton's Python backend. `initialize` runs once per instance (args.instanceIndex tells which);
 * module-level state is shared by the instances of one load. Reloading re-reads the file.
 */
import { statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { InferenceServerError } from '../errors';
import type { NormalizedModelConfig } from '../config/normalize';
import type { InferFunc, Request, ResponseOutputs, TritonContext } from '../request';

/** What `initialize` receives (Triton's Python backend `args`, camelCased). */
export interface JsModelArgs {
  modelConfig: NormalizedModelConfig;
  modelName: string;
  modelVersion: number;
  modelRepository: string;
  instanceIndex: number;
  instanceName: string;
  instanceKind: string;
}

/** The exports of a model.js / model.mjs. */
export interface JsModelModule {
  initialize?(args: JsModelArgs): void | Promise<void>;
  execute(requests: Request[], context: TritonContext): ResponseOutputs[] | Promise<ResponseOutputs[]>;
  finalize?(): void | Promise<void>;
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
    // A fresh URL per file version, so a reload gets the new code.
    const url = `${pathToFileURL(file).href}?mtime=${statSync(file).mtimeMs}`;
    const mod = (await dynamicImport(url)) as JsModelModule & { default?: JsModelModule };
    return typeof mod.execute === 'function' ? mod : mod.default ?? mod;
  }
  const resolved = require.resolve(file);
  delete require.cache[resolved];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(resolved) as JsModelModule;
}

/** Imports the model file and initializes one instance per count. */
export async function loadJsModel(
  file: string, config: NormalizedModelConfig, repository: string,
): Promise<LoadedJsModel> {
  let mod: JsModelModule;
  try {
    mod = await importModule(file);
  } catch (err) {
    throw new InferenceServerError('INVALID_ARG', `model '${config.name}': cannot load ${file}: ${(err as Error).message}`);
  }
  if (typeof mod.execute !== 'function') {
    throw new InferenceServerError('INVALID_ARG', `model '${config.name}': ${file} must export an execute(requests, context) function`);
  }
  const count = config.instanceGroup.reduce((n, g) => n + g.count, 0) || 1;
  for (let i = 0; i < count; i++) {
    await mod.initialize?.({
      modelConfig: config, modelName: config.name, modelVersion: config.version, modelRepository: repository,
      instanceIndex: i, instanceName: `${config.name}_${i}`, instanceKind: config.instanceGroup[0]?.kind ?? 'KIND_CPU',
    });
  }
  const execute: InferFunc = (requests, context) => mod.execute(requests, context);
  return {
    funcs: Array.from({ length: count }, () => execute),
    finalize: async () => {
      await mod.finalize?.();
    },
  };
}
