/**
 * The HTTP/REST frontend (KServe v2 + Triton's extensions) on `httpPort` (default 8000):
 * node:http (node:https with httpUseSsl / httpUseSslMutual) with keep-alive, Triton's routes and status codes, restricted API groups, and a
 * two-step graceful shutdown (stop accepting, then close once the models drained).
 *
 * Every request ends exactly once: a handler's answer, or its error mapped to Triton's
 * `{"error": ...}` body; nothing a client sends can throw out of the request handler.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import { invalidArg } from '../../errors';
import type { ServerContext } from '../context';
import type { Frontend } from '../frontend';
import { failedRestriction } from '../restrictions';
import { DEFAULT_MAX_INPUT_SIZE } from './body';
import type { Handler, HttpCall, HttpSettings } from './call';
import { compileForwardPattern, type RawInputSpec } from './infer-request';
import { resolveModel } from '../inference-service';
import { loadServerTls } from '../tls';
import { TurnQueue } from '../turn';
import { generate, generateStream } from './handlers/generate';
import { infer } from './handlers/infer';
import {
  live, modelConfigRoute, modelMetadataRoute, modelReadyRoute, ready, serverMetadataRoute, statisticsRoute,
} from './handlers/metadata';
import { load, repositoryIndex, unload } from './handlers/repository';
import { logging, trace } from './handlers/settings';
import {
  cudaRegister, cudaStatus, cudaUnregister, systemRegister, systemStatus, systemUnregister,
} from './handlers/shared-memory';
import { httpFrontend, listen, type Inflight } from './listener';
import { matchRoute, type RouteName } from './router';
import { sendError, sendJson } from './respond';

const HANDLERS: Record<RouteName, Handler> = {
  serverMetadata: serverMetadataRoute, live, ready, modelReady: modelReadyRoute, modelMetadata: modelMetadataRoute,
  modelConfig: modelConfigRoute, infer, generate, generateStream, statistics: statisticsRoute, repositoryIndex, load, unload,
  systemStatus, systemRegister, systemUnregister, cudaStatus, cudaRegister, cudaUnregister, trace, logging,
};

/**
 * Idle keep-alive connections stay open this long: longer than the 60 s idle timeout of common
 * load balancers, so the server is never the side that closes a connection a client reuses.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** True when the request announced a body that has not been read to its end. */
function bodyPending(req: http.IncomingMessage): boolean {
  if (req.complete) return false;
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Answers without running a handler (404, 405, 403), closing the connection if a body is unread. */
function refuse(req: http.IncomingMessage, res: http.ServerResponse, status: number, error: string): void {
  if (bodyPending(req)) res.setHeader('Connection', 'close');
  sendJson(res, status, { error });
}

function header(req: http.IncomingMessage, key: string): string | undefined {
  const value = req.headers[key];
  return Array.isArray(value) ? value[0] : value;
}

function dispatch(
  ctx: ServerContext, settings: HttpSettings, inflight: Inflight, req: http.IncomingMessage, res: http.ServerResponse,
): void {
  inflight.count++;
  const call: HttpCall = { ctx, req, res, params: {}, settings };
  // The one 'close' listener of a request ('close' comes once; `on` spares once's wrapper): it
  // ends the in-flight count and cancels the request's work when the client went away before
  // the answer.
  res.on('close', () => {
    if (call.disconnect && !res.writableFinished) call.disconnect.abort();
    if (--inflight.count === 0) inflight.onIdle?.();
  });
  const match = matchRoute(req.url ?? '/');
  if (!match) return refuse(req, res, 404, 'Not Found');
  const { route } = match;
  call.params = match.params;
  if (ctx.httpRestrictions.size > 0) {
    const failed = failedRestriction(ctx.httpRestrictions, route.group, (key) => header(req, key));
    if (failed) return refuse(req, res, 403, `This API is restricted, expecting header '${failed.key}'`);
  }
  if (!(route.methods as readonly string[]).includes(req.method ?? '')) return refuse(req, res, 405, 'Method Not Allowed');
  void run(HANDLERS[route.name], call);
}

/** Runs a handler; whatever it throws or rejects with becomes Triton's error answer. */
async function run(handler: Handler, call: HttpCall): Promise<void> {
  try {
    await handler(call);
  } catch (err) {
    const { req, res } = call;
    if (bodyPending(req) && !res.headersSent) res.setHeader('Connection', 'close');
    sendError(req, res, err, call.ctx.logger);
  }
}

/** Malformed HTTP (llhttp refused it): a JSON 4xx, then the connection closes. */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large']
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
  const body = JSON.stringify({ error: `malformed HTTP request (${err.code ?? 'error'}): ${err.message}` });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** The model's only input, for raw binary requests. */
function rawInput(ctx: ServerContext, model: string, version?: string): RawInputSpec {
  const { config } = resolveModel(ctx.triton, model, version);
  const input = config.inputs[0];
  return {
    name: input?.name ?? '', dtype: input?.dtype ?? 'BYTES', dims: input?.dims ?? [],
    batching: config.maxBatchSize > 0, inputCount: config.inputs.length,
  };
}

/** The frontend's settings from the TritonConfig, checked once at start-up. */
export function httpSettings(ctx: ServerContext): HttpSettings {
  const max = ctx.triton.config.httpMaxInputSize ?? DEFAULT_MAX_INPUT_SIZE;
  if (!Number.isSafeInteger(max) || max <= 0) throw invalidArg(`httpMaxInputSize must be a positive integer, got ${max}`);
  return {
    maxInputSize: max,
    sources: {
      sharedMemoryInput: (what, dtype, shape, ref) => ctx.inference.inputFromSharedMemory(what, dtype, shape, ref),
      rawInput: (model, version) => rawInput(ctx, model, version),
      forwardHeaders: compileForwardPattern(ctx.triton.config.httpHeaderForwardPattern),
    },
    turn: new TurnQueue(),
  };
}

/**
 * Starts the HTTP frontend (TritonConfig httpAddress/httpPort; port 0 picks a free port), over
 * TLS when httpUseSsl or httpUseSslMutual asks for it.
 */
export async function startHttpFrontend(ctx: ServerContext): Promise<Frontend> {
  const config = ctx.triton.config;
  const settings = httpSettings(ctx);
  const inflight: Inflight = { count: 0, onIdle: null };
  const tls = loadServerTls(config, 'http', ctx.logger);
  const onRequest: http.RequestListener = (req, res) => {
    dispatch(ctx, settings, inflight, req, res);
  };
  const options: http.ServerOptions = { noDelay: true, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS };
  const server: http.Server = tls
    ? https.createServer({
      ...options, cert: tls.cert, key: tls.key, ca: tls.ca ?? undefined,
      // Mutual TLS: a client without a certificate signed by httpRootCert fails the handshake.
      requestCert: tls.mutual, rejectUnauthorized: tls.mutual,
    }, onRequest)
    : http.createServer(options, onRequest);
  server.on('clientError', onClientError);
  const port = await listen(server, config.httpPort ?? 8000, config.httpAddress ?? '0.0.0.0', 'HTTP frontend');
  if (tls) ctx.logger.info(`HTTPService uses TLS (HTTPS)${tls.mutual ? ' and requires client certificates' : ''}`);
  return httpFrontend('http', server, port, inflight);
}
