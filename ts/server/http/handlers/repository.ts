/**
 * The model repository extension: `POST /v2/repository/index` (body `{"ready"?: bool}`),
 * `.../models/{m}/load` (body `{"parameters": {"config": "<JSON>", "file:<path>":
 * "<base64>"}}`) and `.../unload` (`{"parameters": {"unload_dependents": bool}}`). The
 * repository manager (ts/repository/) validates model names and file paths; this file only
 * translates the bodies.
 */
import { invalidArg } from '../../../errors';
import type { LoadOverride } from '../../../repository/manager';
import { readJsonObject } from '../body';
import type { HttpCall } from '../call';
import { sendEmpty, sendJson } from '../respond';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function parameters(body: Record<string, unknown>, what: string): Record<string, unknown> {
  const params = body.parameters;
  if (params === undefined) return {};
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw invalidArg(`${what}: 'parameters' must be an object`);
  }
  return params as Record<string, unknown>;
}

/** POST /v2/repository[/{repo}]/index. */
export async function repositoryIndex(call: HttpCall): Promise<void> {
  const body = await readJsonObject(call.req, call.settings.maxInputSize);
  if (body.ready !== undefined && typeof body.ready !== 'boolean') {
    throw invalidArg("Invalid value for 'ready': expected a boolean");
  }
  sendJson(call.res, 200, call.ctx.triton.repositoryIndex(body.ready === true));
}

/** The load API's parameters as the repository manager takes them. */
export function loadOverride(params: Record<string, unknown>, model: string): LoadOverride {
  const override: LoadOverride = {};
  for (const [key, value] of Object.entries(params)) {
    if (key === 'config') {
      if (typeof value !== 'string') throw invalidArg(`failed to load '${model}', parameter 'config' must be a JSON string`);
      override.config = value;
    } else if (key.startsWith('file:')) {
      if (typeof value !== 'string' || !BASE64.test(value)) {
        throw invalidArg(`failed to load '${model}', parameter '${key}' must be base64-encoded file content`);
      }
      (override.files ??= {})[key.slice(5)] = Buffer.from(value, 'base64');
    } else {
      throw invalidArg(`failed to load '${model}', unknown parameter '${key}' (expected 'config' or 'file:<path>')`);
    }
  }
  return override;
}

/** POST /v2/repository[/{repo}]/models/{m}/load. */
export async function load(call: HttpCall): Promise<void> {
  const model = call.params.model!;
  const body = await readJsonObject(call.req, call.settings.maxInputSize);
  await call.ctx.triton.loadModel(model, loadOverride(parameters(body, `load of model '${model}'`), model));
  sendEmpty(call.res, 200);
}

/** POST /v2/repository[/{repo}]/models/{m}/unload. */
export async function unload(call: HttpCall): Promise<void> {
  const model = call.params.model!;
  const body = await readJsonObject(call.req, call.settings.maxInputSize);
  const params = parameters(body, `unload of model '${model}'`);
  for (const [key, value] of Object.entries(params)) {
    // Accepted; an ensemble's composing models are not unloaded with it (they may serve direct
    // traffic): unload them by name (docs/http.md).
    if (key !== 'unload_dependents') throw invalidArg(`unload of model '${model}': unknown parameter '${key}'`);
    if (typeof value !== 'boolean') throw invalidArg(`unload of model '${model}': 'unload_dependents' must be a boolean`);
  }
  await call.ctx.triton.unloadModel(model);
  sendEmpty(call.res, 200);
}
