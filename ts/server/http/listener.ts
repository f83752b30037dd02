/**
 * The listener side shared by the HTTP and metrics frontends: listening (with an error naming
 * the address), and the two-step graceful shutdown — stop accepting first; once the models
 * drained, let the responses in flight out (bounded), then close every connection.
 */
import type * as http from 'node:http';
import { InferenceServerError } from '../../errors';
import type { Frontend } from '../frontend';

/** Requests being answered, so close() can let their responses out before cutting connections. */
export interface Inflight {
  count: number;
  /** Called when the count drops to 0 (set while closing). */
  onIdle: (() => void) | null;
}

/** Listens on `port` at `address`; UNAVAILABLE naming both when it cannot. */
export function listen(server: http.Server, port: number, address: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      reject(new InferenceServerError('UNAVAILABLE', `${what}: cannot listen on ${address}:${port}: ${err.message}`));
    };
    server.once('error', onError);
    server.listen(port, address, () => {
      server.off('error', onError);
      resolve((server.address() as { port: number }).port);
    });
  });
}

/** How long close() lets in-flight responses finish (the models have drained by then). */
const CLOSE_GRACE_MS = 2000;

/**
 * A frontend over a node:http server: stop accepting first; close every connection last, once
 * the responses in flight (`inflight`, when tracked) are out or after a short grace period.
 */
export function httpFrontend(kind: Frontend['kind'], server: http.Server, port: number, inflight?: Inflight): Frontend {
  let closed: Promise<void> | null = null;
  const stopAccepting = (): Promise<void> => {
    closed ??= new Promise((resolve) => server.close(() => resolve()));
    return closed;
  };
  return {
    kind,
    port,
    beginShutdown: () => {
      // In-flight requests (and those on open keep-alive connections) are still answered;
      // new inferences get 503 because the context is exiting.
      void stopAccepting();
    },
    close: async () => {
      const done = stopAccepting();
      // Not closeIdleConnections(): Node counts a connection whose finished response has a
      // pipelined one queued behind it as idle, and would cut the queued answer.
      if (inflight && inflight.count > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, CLOSE_GRACE_MS);
          inflight.onIdle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      // Let the last responses handed to their sockets flush, then cut what is left.
      await new Promise((resolve) => setImmediate(resolve));
      server.closeAllConnections();
      await done;
    },
  };
}
