/**
 * What every HTTP handler receives: the shared server state, the exchange, what the path named,
 * and the frontend's settings (read once at start-up, not per request).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ServerContext } from '../context';
import type { RouteParams } from './router';
import type { TurnQueue } from '../turn';
import type { DisconnectSignal } from './disconnect';
import type { InferSources } from './infer-request';

export interface HttpSettings {
  /** --http-max-input-size: largest body, also after decompression. */
  maxInputSize: number;
  /** Shared memory, raw-request inputs and --http-header-forward-pattern, for the infer decoder. */
  sources: InferSources;
  /** Starts the inferences of one event-loop turn together (see turn.ts). */
  turn: TurnQueue;
}

export interface HttpCall {
  ctx: ServerContext;
  req: IncomingMessage;
  res: ServerResponse;
  params: RouteParams;
  settings: HttpSettings;
  /**
   * Set by a handler whose work should stop when the client goes away: aborted when the
   * connection closes before the response was sent (the server's one 'close' listener).
   */
  disconnect?: DisconnectSignal;
}

/** A route handler: answers the call (or throws an error the server answers for it). */
export type Handler = (call: HttpCall) => unknown;
