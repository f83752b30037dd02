/**
 * Health, metadata, configuration and statistics routes: answers computed from the Triton the
 * server fronts (ts/server/metadata.ts holds the shapes both frontends share).
 *
 * While the server is exiting, liveness and readiness answer 503 "Server exiting" (Triton's
 * core returns UNAVAILABLE then), so load balancers stop routing to it.
 */
import { unavailable } from '../../../errors';
import { toModelConfigJson } from '../../../config/model-config-json';
import { stringifyExactJson } from '../../../exact-json';
import { resolveModel } from '../../inference-service';
import { modelMetadata, modelReady, serverMetadata, statistics } from '../../metadata';
import type { HttpCall } from '../call';
import { sendEmpty, sendJson, sendJsonText } from '../respond';

function checkNotExiting(call: HttpCall): void {
  if (call.ctx.exiting) throw unavailable('Server exiting');
}

/** GET /v2/health/live: 200 empty while serving. */
export function live(call: HttpCall): void {
  checkNotExiting(call);
  sendEmpty(call.res, call.ctx.triton.isConnected() ? 200 : 400);
}

/** GET /v2/health/ready: 200 empty when every model is ready (strict readiness), else 400. */
export function ready(call: HttpCall): void {
  checkNotExiting(call);
  sendEmpty(call.res, call.ctx.triton.isReady() ? 200 : 400);
}

/** GET /v2/models/{m}[/versions/{v}]/ready: 200 empty, or 400 "Model version not ready". */
export function modelReadyRoute(call: HttpCall): void {
  checkNotExiting(call);
  const { model, version } = call.params;
  if (modelReady(call.ctx.triton, model!, version)) sendEmpty(call.res, 200);
  else sendJson(call.res, 400, { error: 'Model version not ready' });
}

/** GET /v2: name, version, extensions. */
export function serverMetadataRoute(call: HttpCall): void {
  sendJson(call.res, 200, serverMetadata(call.ctx.triton));
}

/** GET /v2/models/{m}[/versions/{v}]. */
export function modelMetadataRoute(call: HttpCall): void {
  sendJson(call.res, 200, modelMetadata(call.ctx.triton, call.params.model!, call.params.version));
}

/** GET /v2/models/{m}[/versions/{v}]/config: the normalized config in Triton's JSON form. */
export function modelConfigRoute(call: HttpCall): void {
  const model = resolveModel(call.ctx.triton, call.params.model!, call.params.version);
  sendJsonText(call.res, 200, stringifyExactJson(toModelConfigJson(model.config)));
}

/** GET /v2/models[/{m}[/versions/{v}]]/stats. */
export function statisticsRoute(call: HttpCall): void {
  sendJson(call.res, 200, statistics(call.ctx.triton, call.params.model, call.params.version));
}
