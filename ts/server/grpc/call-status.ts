/**
 * What every gRPC handler checks before it runs, and how errors become gRPC statuses: Triton's
 * codes (error.grpcCode; triton-protocol.md §1.12), refusal while the server exits (exiting.ts), restricted
 * protocol groups, and requests that did not decode.
 */
import { status as Status, type Metadata } from '@grpc/grpc-js';
import { InferenceServerError, MAX_MESSAGE_CHARS, boundMessage } from '../../errors';
import type { ServerContext } from '../context';
import { exitingRefusal } from '../exiting';
import { failedRestriction, type ApiGroup } from '../restrictions';
import { isDecodeFailure } from './protos';

/** Metadata prefix of restricted-protocol headers (tritonserver's --grpc-restricted-protocol). */
export const RESTRICTED_HEADER_PREFIX = 'triton-grpc-protocol-';

/** A status to fail a call with (grpc-js's ServerStatusResponse). */
export interface CallStatus {
  code: Status;
  details: string;
}

/**
 * The most bytes a status message takes on the wire. grpc-js sends it percent-encoded in the
 * `grpc-message` trailer; HTTP/2 peers refuse header lists past their limit (8 KiB by default
 * in gRPC C++ clients, Triton's), and a refused trailer leaves the call without a status and
 * can stall the whole connection. So every status this frontend sends goes through here.
 */
export const MAX_STATUS_MESSAGE_BYTES = MAX_MESSAGE_CHARS;

/** Lone UTF-16 surrogates: encodeURI (used by grpc-js for grpc-message) throws on them. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `details` bounded so that its grpc-message encoding fits MAX_STATUS_MESSAGE_BYTES. */
export function statusDetails(details: string): string {
  // One character encodes to at most 9 bytes ("%E2%80%A6"): short messages always fit.
  if (details.length <= MAX_STATUS_MESSAGE_BYTES / 9) return details;
  let bounded = boundMessage(details, MAX_STATUS_MESSAGE_BYTES).replace(LONE_SURROGATE, '\uFFFD');
  while (encodeURI(bounded).length > MAX_STATUS_MESSAGE_BYTES) bounded = boundMessage(bounded, Math.floor(bounded.length * 0.7));
  return bounded;
}

export function callStatus(code: Status, details: string): CallStatus {
  return { code, details: statusDetails(details) };
}

/**
 * The status of an error: InferenceServerErrors keep their Triton code; anything else is an
 * internal fault (logged, since it means a bug rather than a bad request).
 */
export function statusOf(ctx: ServerContext, err: unknown): CallStatus {
  if (err instanceof InferenceServerError) return callStatus(err.grpcCode, err.message);
  const message = err instanceof Error ? err.message : String(err);
  ctx.logger.error(`gRPC: internal error: ${err instanceof Error && err.stack ? err.stack : message}`);
  return callStatus(Status.INTERNAL, message);
}

/** First text value of a metadata key. */
export function metadataValue(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}

/** Whether a call (or a request on an open stream) may run now: null when it may, else the status to refuse it with. */
export function refusal(ctx: ServerContext, group: ApiGroup, metadata: Metadata): CallStatus | null {
  const exiting = exitingRefusal(ctx, 'GRPC');
  if (exiting) return callStatus(exiting.grpcCode, exiting.message);
  const failed = failedRestriction(ctx.grpcRestrictions, group, (key) => metadataValue(metadata, RESTRICTED_HEADER_PREFIX + key));
  if (failed) {
    return callStatus(Status.UNAVAILABLE, `This protocol is restricted, expecting header '${RESTRICTED_HEADER_PREFIX}${failed.key}'`);
  }
  return null;
}

/** The refusal for a request that did not decode, or null. */
export function decodeRefusal(ctx: ServerContext, request: unknown): CallStatus | null {
  return isDecodeFailure(request) ? statusOf(ctx, request.decodeError) : null;
}
