/**
 * The inference calls of `infernode perf -i grpc` (ModelInfer, or ModelStreamInfer with
 * --streaming), timed as perf_analyzer's gRPC client times them (grpc_client.cc): send is
 * marshalling the request, from the inputs to the bytes handed to grpc-js; receive is
 * unmarshalling the response, from its bytes to the client's result. grpc-js decodes a message
 * inside the call, through the method's deserialize function, so that function is wrapped with a
 * timer here; the GrpcInferenceServerClient runs the same steps (the same codec, the same
 * conversions) inside infer() and streamInfer(), where no timer can reach them. Metadata, config
 * and statistics still go through that client.
 *
 * Calls go out as the client's do: a 60 s deadline on ModelInfer; ModelStreamInfer a call per
 * request, half-closed once sent, with `triton_enable_empty_final_response` (a decoupled model's
 * flag-only end arrives) and the `triton_grpc_error` header (a failure ends the call with its
 * status), done at the request's final response. Everything runs on the event loop thread.
 */
import { Client, Metadata, credentials, type ServiceError } from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';
import { EMPTY_FINAL_RESPONSE_PARAM, errorFromStatus, inferRequestFields, inferResult, isEmptyFinal, streamResult } from '../client/grpc-convert';
import { StreamResponseError } from '../client/errors';
import { decodeInferResponse, decodeStreamResponse, type InferResponseMessage, type StreamResponseMessage } from '../server/grpc/infer-codec';
import { encodeInferRequest } from '../server/grpc/infer-encode';
import { INFERENCE_SERVICE } from '../server/grpc/protos';
import type { NDArray } from '../tensor';
import { countRequest, timedDecode, type ClientTimes, type StreamAnswer } from './client-times';

/** The client's defaults: a ModelInfer deadline, and messages up to 2^31 - 1 bytes both ways. */
const CALL_TIMEOUT_MS = 60_000;
const MAX_MESSAGE = 2 ** 31 - 1;

/** The request is encoded before the call (and timed there): grpc-js gets its bytes. */
const asBuffer = (bytes: Buffer): Buffer => bytes;

export class TimedGrpcInfer {
  readonly #client: Client;
  readonly #decodeInfer: (bytes: Buffer) => InferResponseMessage;
  readonly #decodeStream: (bytes: Buffer) => StreamResponseMessage;

  /** `address`: host:port, as the GrpcInferenceServerClient parsed it. */
  constructor(address: string, private readonly model: string, private readonly version: string | undefined, private readonly times: ClientTimes) {
    this.#client = new Client(address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE,
      'grpc.max_send_message_length': MAX_MESSAGE,
      'grpc.enable_channelz': 0,
    });
    this.#decodeInfer = timedDecode(times, decodeInferResponse);
    this.#decodeStream = timedDecode(times, decodeStreamResponse);
  }

  /** One ModelInfer call; resolves once its response is unmarshalled into an InferResult. */
  infer(inputs: Record<string, NDArray>): Promise<void> {
    const start = performance.now();
    const body = encodeInferRequest(inferRequestFields({ modelName: this.model, modelVersion: this.version, inputs }));
    const sent = performance.now();
    return new Promise<void>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        `/${INFERENCE_SERVICE}/ModelInfer`, asBuffer, this.#decodeInfer, body, new Metadata(), { deadline: Date.now() + CALL_TIMEOUT_MS },
        (err: ServiceError | null, response?: InferResponseMessage) => {
          if (err || !response) {
            reject(err ? errorFromStatus(err, 'ModelInfer') : new Error('ModelInfer answered without a response'));
            return;
          }
          // The message was decoded (and timed) by #decodeInfer; this is the rest of the unmarshalling.
          const received = performance.now();
          try {
            inferResult(response);
          } catch (error) {
            reject(error);  // a malformed response fails the call, not the process
            return;
          }
          const end = performance.now();
          countRequest(this.times, start, sent, end - received, end);
          resolve();
        },
      );
    });
  }

  /**
   * One request on a ModelStreamInfer call of its own; resolves at its final response (a
   * decoupled model's 0..N responses all unmarshalled and counted in its receive time).
   */
  streamInfer(inputs: Record<string, NDArray>): Promise<StreamAnswer> {
    const what = `ModelStreamInfer of model '${this.model}'`;
    const start = performance.now();
    const body = encodeInferRequest(inferRequestFields({
      modelName: this.model, modelVersion: this.version, inputs, parameters: { [EMPTY_FINAL_RESPONSE_PARAM]: true },
    }));
    const sent = performance.now();
    const metadata = new Metadata();
    metadata.set('triton_grpc_error', 'true');
    const call = this.#client.makeBidiStreamRequest(`/${INFERENCE_SERVICE}/ModelStreamInfer`, asBuffer, this.#decodeStream, metadata, {});
    return new Promise<StreamAnswer>((resolve, reject) => {
      let recvMs = 0;
      let done = false;
      const answer: StreamAnswer = { responses: 0, lastResponseMs: sent };
      const finish = (err: Error | null): void => {
        if (done) return;
        done = true;
        if (err) {
          call.cancel();
          reject(err);
          return;
        }
        // Not cancelled after the final response: the half-closed call ends by itself, and a
        // server counts stream resets (see GrpcInferenceServerClient.streamInfer).
        const end = performance.now();
        countRequest(this.times, start, sent, recvMs, end);
        resolve(answer);
      };
      call.on('data', (message: StreamResponseMessage) => {
        if (message.errorMessage) {
          finish(new StreamResponseError(message.errorMessage, message.inferResponse?.id ?? ''));
          return;
        }
        if (!message.inferResponse) return;
        const received = performance.now();
        let result: ReturnType<typeof streamResult>;
        try {
          result = streamResult(message.inferResponse);
        } catch (error) {
          finish(error as Error);  // a malformed response fails the request, not the process
          return;
        }
        recvMs += performance.now() - received;
        // The flag-only final response is no response (perf_analyzer's null last response).
        if (!isEmptyFinal(result)) {
          answer.responses++;
          answer.lastResponseMs = received;
        }
        if (result.final) finish(null);
      });
      // A non-OK status comes as 'error' (before 'end'); 'end' after every message was read means
      // an OK end without a flagged final response (a server that sends no empty final).
      call.on('error', (err: ServiceError) => finish(errorFromStatus(err, what)));
      call.on('end', () => finish(null));
      call.write(body);
      call.end();
    });
  }

  close(): void {
    this.#client.close();
  }
}
