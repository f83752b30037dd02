/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`: the hot path. Body read with its limits, decoded
 * (binary tensors as views of the body), one call into InferenceService started with the other
 * inferences of the same event-loop turn (turn.ts), one response write.
 *
 * Cancellation: when the client's connection closes before the answer is written, the request's
 * DisconnectSignal fires: a request still queued is removed without executing (Triton's HTTP
 * request-fini hook), one already executing has its result dropped. Nothing is written to a
 * closed connection.
 */
import { exitingRefusal } from '../../exiting';
import type { Trace } from '../../trace';
import { readBody } from '../body';
import type { HttpCall } from '../call';
import { checkHeaderLength, decodeInferRequest, parseHeaderLength } from '../infer-request';
import { encodeInferResponse } from '../infer-response';
import { DisconnectSignal } from '../disconnect';
import { sendBody } from '../respond';

/** Triton's answer (501) to `/infer` on a decoupled model: those stream through generate_stream or gRPC. */
const DECOUPLED_REFUSAL = "HTTP end point doesn't support models with decoupled transaction policy";

export function infer(call: HttpCall): Promise<unknown> {
  const { ctx, params } = call;
  const modelName = params.model!;
  const refused = exitingRefusal(ctx, 'HTTP');
  if (refused) throw refused;
  const trace = ctx.tracer.begin(modelName, 'HTTP_RECV_START');
  return trace ? traced(call, modelName, trace) : serve(call, modelName, null);
}

/** A sampled request: its trace ends (and is recorded) however the request ends. */
async function traced(call: HttpCall, modelName: string, trace: Trace): Promise<void> {
  let version = '';
  try {
    version = await serve(call, modelName, trace);
  } finally {
    trace.end(version);
  }
}

/** Reads, decodes, infers and answers; resolves with the version that served it. */
async function serve(call: HttpCall, modelName: string, trace: Trace | null): Promise<string> {
  const { ctx, req, res, params, settings } = call;
  const headerLength = parseHeaderLength(req.headers['inference-header-content-length']);
  const body = await readBody(req, settings.maxInputSize, headerLength ?? 0);
  if (headerLength !== null) checkHeaderLength(headerLength, body.length);
  const decoded = decodeInferRequest(body, headerLength, {
    modelName, modelVersion: params.version, rawHeaders: req.rawHeaders, sources: settings.sources,
  });
  call.disconnect = new DisconnectSignal();
  decoded.call.signal = call.disconnect;
  decoded.call.trace = trace;
  trace?.mark('HTTP_INFER_START');
  const answer = await settings.turn.run(() => ctx.inference.infer(decoded.call, DECOUPLED_REFUSAL));
  if (res.destroyed) return answer.modelVersion;
  const { headers, body: out } = encodeInferResponse(answer, decoded.binaryByDefault);
  trace?.mark('HTTP_SEND_START');
  sendBody(req, res, 200, headers, out);
  return answer.modelVersion;
}
