/**
 * The one refusal of new requests while the server exits, for both frontends. The state is
 * `ServerContext.exiting`: Triton.stop() sets it (main thread) before it tells the frontends to
 * stop accepting, and it never goes back. The HTTP frontend asks here before an inference
 * (infer, generate, generate_stream); the gRPC frontend before every call and every request on
 * an open stream. Requests already accepted run on, so the models can drain.
 *
 * The text is Triton's (server src/grpc/infer_handler.cc and stream_infer_handler.cc: UNAVAILABLE
 * "GRPC server is shutting down and has stopped accepting new requests."), naming the frontend
 * that refuses; UNAVAILABLE is HTTP 503 and gRPC 14, which clients and load balancers retry on
 * another server. (Triton's HTTP frontend refuses new connections at this point and has no text.)
 */
import { unavailable, type InferenceServerError } from '../errors';
import type { ServerContext } from './context';

/** The frontend a refusal comes from, as Triton writes it in the text. */
export type RefusingFrontend = 'HTTP' | 'GRPC';

/** Triton's refusal of a request that arrives after the frontend stopped accepting. */
export function stoppedAccepting(frontend: RefusingFrontend): InferenceServerError {
  return unavailable(`${frontend} server is shutting down and has stopped accepting new requests.`);
}

/** The refusal for a new request while the server exits; null while it serves. */
export function exitingRefusal(ctx: Pick<ServerContext, 'exiting'>, frontend: RefusingFrontend): InferenceServerError | null {
  return ctx.exiting ? stoppedAccepting(frontend) : null;
}
