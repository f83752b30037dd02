/**
 * The gRPC frontend: Triton's GRPCInferenceService and the standard health service on
 * `grpcAddress:grpcPort` (default 0.0.0.0:8001), served by @grpc/grpc-js with Triton's limits
 * (2^31 - 1 byte messages both ways; grpc-js would default to 4 MiB received) and keepalive
 * settings, over TLS when grpcUseSsl or grpcUseSslMutual asks for it. Shutdown: once the server
 * exits (`ctx.exiting`, set by Triton.stop()), new calls and new requests on open streams fail with
 * Triton's UNAVAILABLE (exiting.ts) while accepted ones finish; `close` ends what is left, then the server.
 */
import {
  Server, ServerCredentials, status as Status, type ChannelOptions, type ServerInterceptor, type StatusObject,
} from '@grpc/grpc-js';
import { invalidArg } from '../../errors';
import type { TritonConfig } from '../../config/types';
import type { ServerContext } from '../context';
import type { Frontend } from '../frontend';
import { callStatus, type CallStatus } from './call-status';
import { stoppedAccepting } from '../exiting';
import { healthHandlers, serviceHandlers } from './handlers';
import { modelInfer, modelStreamInfer, type InferHandlerOptions } from './infer-handlers';
import { TurnQueue } from '../turn';
import { answerPace } from '../answer-pace';
import { compileHeaderForwardPattern } from '../parameters';
import { loadServerTls, type ServerTls } from '../tls';
import { SERVER_OPTIONS, forServer, healthServiceDefinition, inferenceServiceDefinition } from './protos';

/** Triton's default and largest message size (INT32_MAX). */
export const GRPC_MAX_MESSAGE_SIZE = 2 ** 31 - 1;

/** Default bound on the inflated size of a compressed request message: httpMaxInputSize's. */
export const GRPC_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024;

/** How long `close` waits for calls still open (idle streams) before dropping connections. */
const CLOSE_GRACE_MS = 2000;

function positiveInt(value: number | undefined, fallback: number, flag: string, max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw invalidArg(`${flag} must be an integer in 1..${max}, got ${value}`);
  return v;
}

/** grpc-js server options from the TritonConfig (Triton's defaults where unset). */
export function grpcServerOptions(config: TritonConfig): ChannelOptions {
  const maxMessage = positiveInt(config.grpcMaxMessageSize, GRPC_MAX_MESSAGE_SIZE, 'grpcMaxMessageSize', GRPC_MAX_MESSAGE_SIZE);
  return {
    'grpc.max_receive_message_length': maxMessage,
    'grpc.max_send_message_length': maxMessage,
    'grpc.keepalive_time_ms': positiveInt(config.grpcKeepaliveTime, 7_200_000, 'grpcKeepaliveTime'),
    'grpc.keepalive_timeout_ms': positiveInt(config.grpcKeepaliveTimeout, 20_000, 'grpcKeepaliveTimeout'),
    'grpc.keepalive_permit_without_calls': config.grpcKeepalivePermitWithoutCalls ? 1 : 0,
    'grpc.http2.max_pings_without_data': config.grpcHttp2MaxPingsWithoutData ?? 2,
    // Channelz bookkeeping costs time on every call and nothing reads it.
    'grpc.enable_channelz': 0,
  };
}

/** The largest inflated size of a compressed request message (grpcMaxDecompressedSize). */
export function grpcMaxDecompressedSize(config: TritonConfig): number {
  const maxMessage = positiveInt(config.grpcMaxMessageSize, GRPC_MAX_MESSAGE_SIZE, 'grpcMaxMessageSize', GRPC_MAX_MESSAGE_SIZE);
  const bound = positiveInt(config.grpcMaxDecompressedSize, GRPC_MAX_DECOMPRESSED_SIZE, 'grpcMaxDecompressedSize', GRPC_MAX_MESSAGE_SIZE);
  return Math.min(bound, maxMessage);
}

/** The fields of grpc-js's BaseServerInterceptingCall (server-interceptors.js) this module sets. */
interface GrpcJsBaseCall {
  incomingEncoding?: unknown;
  maxReceiveMessageSize?: unknown;
  sendStatus(status: PartialStatus): void;
}
type PartialStatus = Partial<StatusObject> & { code: Status; details: string };

const INFLATED_TOO_LARGE = 'Received message that decompresses to a size larger than';

/**
 * Bounds how large a compressed request message may inflate. grpc-js has one limit,
 * grpc.max_receive_message_length, for both the size of a message as framed and its size once
 * inflated, and Triton's 2 GiB default for the first let a 255 KiB gzip message inflate to
 * 256 MiB (or 2 GiB). grpc-js reads the framed limit once, when it creates the call (its
 * StreamDecoder), and the inflated limit (`maxReceiveMessageSize`) each time it inflates; this
 * interceptor runs on the freshly created call, before any message is read, and lowers the
 * second for calls whose `grpc-encoding` is not identity. Uncompressed calls are untouched
 * (nothing is set or wrapped for them). grpc-js then refuses a message that inflates past the
 * bound with RESOURCE_EXHAUSTED, stopping the inflation there; the refusal gains a hint.
 * This reaches into grpc-js internals (pinned in package.json): the gRPC suites test it.
 */
function boundInflatedMessages(bound: number): ServerInterceptor {
  // The call goes on as it is, not wrapped (ServerInterceptor's type asks for a wrapper).
  return (_method, call) => unwrapped(call, (base) => {
    if (base.incomingEncoding === 'identity' || typeof base.maxReceiveMessageSize !== 'number') return;
    base.maxReceiveMessageSize = Math.min(base.maxReceiveMessageSize, bound);
    const sendStatus = base.sendStatus.bind(base);
    base.sendStatus = (status) => sendStatus(status.code === Status.RESOURCE_EXHAUSTED && status.details.startsWith(INFLATED_TOO_LARGE)
      ? { ...status, details: `${status.details} bytes (grpcMaxDecompressedSize, --grpc-max-decompressed-size): ` +
          'send the message uncompressed (bounded by grpcMaxMessageSize instead) or raise the limit' }
      : status);
  });
}

function unwrapped(call: unknown, adjust: (base: GrpcJsBaseCall) => void): ReturnType<ServerInterceptor> {
  adjust(call as GrpcJsBaseCall);
  return call as ReturnType<ServerInterceptor>;
}

function bindAddress(address: string, port: number): string {
  return address.includes(':') && !address.startsWith('[') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** TLS (grpcUseSsl, grpcUseSslMutual) or plaintext credentials. */
function serverCredentials(tls: ServerTls | null): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], tls.mutual);
}

function bind(server: Server, address: string, credentials: ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (err, port) => {
      if (err) reject(new Error(`gRPC frontend cannot listen on ${address}: ${err.message}`));
      else resolve(port);
    });
  });
}

/** Starts the gRPC frontend; resolves once it listens. */
export async function startGrpcFrontend(ctx: ServerContext): Promise<Frontend> {
  const config = ctx.triton.config;
  const level = config.grpcInferResponseCompressionLevel ?? 'none';
  if (level !== 'none') {
    // grpc-js servers cannot compress what they send (it writes every message uncompressed).
    ctx.logger.warning(`gRPC: grpcInferResponseCompressionLevel '${level}' is not supported by grpc-js; responses are sent uncompressed`);
  }
  // Read before anything listens: a bad file fails start-up naming the setting.
  const tls = loadServerTls(config, 'grpc', ctx.logger);
  const server = new Server({ ...grpcServerOptions(config), interceptors: [boundInflatedMessages(grpcMaxDecompressedSize(config))] });
  const streams = new Set<{ close(status: CallStatus): void }>();
  const infer: InferHandlerOptions = {
    ctx, turns: new TurnQueue(), forwardPattern: compileHeaderForwardPattern(config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern'), streams,
  };
  server.addService(forServer(inferenceServiceDefinition(SERVER_OPTIONS)), {
    ...serviceHandlers(ctx),
    ModelInfer: modelInfer(infer),
    ModelStreamInfer: modelStreamInfer(infer),
  });
  server.addService(forServer(healthServiceDefinition(SERVER_OPTIONS)), healthHandlers(ctx));
  const address = bindAddress(config.grpcAddress ?? '0.0.0.0', config.grpcPort ?? 8001);
  let port: number;
  try {
    port = await bind(server, address, serverCredentials(tls));
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
  ctx.logger.info(`Started GRPCInferenceService at ${address.replace(/:\d+$/, `:${port}`)}`);
  if (tls) ctx.logger.info(`GRPCInferenceService uses TLS${tls.mutual ? ' and requires client certificates' : ''}`);
  return {
    kind: 'grpc',
    port,
    beginShutdown(): void {
      // Nothing to do here: new calls are refused from ctx.exiting, which Triton.stop() set
      // before calling this; grpc-js keeps accepting connections until close().
    },
    async close(): Promise<void> {
      // The models have drained, but the answers of their last batches may still be paced
      // (answer-pace.ts): let them reach their streams before the streams are ended.
      await answerPace.flushed();
      // Streams a client keeps open would hold the server forever: end them, saying why.
      const closing = stoppedAccepting('GRPC');
      for (const stream of [...streams]) stream.close(callStatus(closing.grpcCode, closing.message));
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, CLOSE_GRACE_MS);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
