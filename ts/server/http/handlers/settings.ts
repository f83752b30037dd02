/**
 * Trace settings (`GET/POST /v2/trace/setting`, `/v2/models/{m}/trace/setting`) and log
 * settings (`GET/POST /v2/logging`). POST applies the body and answers with every setting,
 * as Triton does; the Tracer and the Logger validate the values.
 */
import { resolveModel } from '../../inference-service';
import { readJsonObject } from '../body';
import type { HttpCall } from '../call';
import { sendJson } from '../respond';

/** GET/POST /v2[/models/{m}]/trace/setting. */
export async function trace(call: HttpCall): Promise<void> {
  const model = call.params.model;
  // Per-model settings exist only for models the server knows (NOT_FOUND otherwise).
  if (model) resolveModel(call.ctx.triton, model);
  if (call.req.method === 'POST') {
    const body = await readJsonObject(call.req, call.settings.maxInputSize);
    sendJson(call.res, 200, call.ctx.tracer.update(body, model));
  } else {
    sendJson(call.res, 200, call.ctx.tracer.settings(model));
  }
}

/** GET/POST /v2/logging. */
export async function logging(call: HttpCall): Promise<void> {
  if (call.req.method === 'POST') {
    const body = await readJsonObject(call.req, call.settings.maxInputSize);
    sendJson(call.res, 200, call.ctx.logger.update(body));
  } else {
    sendJson(call.res, 200, call.ctx.logger.settings);
  }
}
