/**
 * Client-side errors (PyTriton's PyTritonClient* classes, camelCased). Each is an
 * InferenceServerError, so every client failure can be handled one way; the subclasses let
 * callers tell a timeout, a closed client or a bad argument from a server's answer, which
 * arrives as a plain InferenceServerError with the server's message and a code derived from
 * the HTTP status (or the gRPC status).
 */
import { InferenceServerError, type StatusCodeName } from '../errors';

/** Base of the errors raised by the client itself (not answers from a server). */
export class ClientError extends InferenceServerError {
  constructor(code: StatusCodeName, message: string) {
    super(code, message);
    this.name = new.target.name;
  }
}

/** A bad argument: inputs, parameters, headers (PyTritonClientValueError). */
export class ClientValueError extends ClientError {
  constructor(message: string) {
    super('INVALID_ARG', message);
  }
}

/** A URL whose scheme is neither http nor grpc, or that does not parse (PyTritonClientInvalidUrlError). */
export class ClientInvalidUrlError extends ClientValueError {}

/** A deadline passed: a call's timeout, or waiting for the server or model (PyTritonClientTimeoutError). */
export class ClientTimeoutError extends ClientError {
  constructor(message: string) {
    super('UNAVAILABLE', message);
  }
}

/**
 * Waiting for a model the server says it does not have: no entry in its repository index
 * (PyTritonClientModelUnavailableError). A model that is loading, or listed but unloaded, is
 * waited for instead.
 */
export class ModelUnavailableError extends ClientError {
  constructor(message: string) {
    super('NOT_FOUND', message);
  }
}

/** The client was closed (PyTritonClientClosedError). */
export class ClientClosedError extends ClientError {
  constructor(message = 'the client is closed') {
    super('UNAVAILABLE', message);
  }
}

/** inferBatch on a model whose max_batch_size is 0 (PyTritonClientModelDoesntSupportBatchingError). */
export class ModelDoesntSupportBatchingError extends ClientError {
  constructor(message: string) {
    super('UNSUPPORTED', message);
  }
}

/**
 * A request's in-band error on a ModelStreamInfer stream (`error_message`): the stream stays
 * open, and the failed request's id says which request failed. The message is the server's; the
 * wire carries no status code with it, so the code is UNKNOWN (streamInfer asks the server for
 * the status instead, see grpc.ts).
 */
export class StreamResponseError extends InferenceServerError {
  /** The id of the request that failed ('' when it had none). */
  readonly requestId: string;

  constructor(message: string, requestId: string) {
    super('UNKNOWN', message);
    this.name = 'StreamResponseError';
    this.requestId = requestId;
  }
}

/** The core status a server's HTTP status stands for (Triton's mapping, read backwards). */
export function codeFromHttpStatus(status: number): StatusCodeName {
  switch (status) {
    case 400: return 'INVALID_ARG';
    case 404: return 'NOT_FOUND';
    case 500: return 'INTERNAL';
    case 501: return 'UNSUPPORTED';
    case 503: return 'UNAVAILABLE';
    default: return 'UNKNOWN';
  }
}
