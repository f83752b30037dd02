/**
 * Starts and stops the frontends a TritonConfig asks for (HTTP on 8000, gRPC on 8001, metrics
 * on 8002 by default; port 0 picks a free port). Shutdown happens in two steps so in-flight
 * work finishes: `beginShutdown` stops accepting (new connections, new calls), then, after the
 * models drained, `close` tears the listeners down.
 */
import type { ServerContext } from './context';
import type { Frontend } from './frontend';
import { startGrpcFrontend } from './grpc/server';
import { startHttpFrontend } from './http/server';
import { startMetricsFrontend } from './metrics/server';

export type { Frontend } from './frontend';

/** Starts every allowed frontend; on a failure, the ones already started are closed again. */
export async function startFrontends(ctx: ServerContext): Promise<Frontend[]> {
  const started: Frontend[] = [];
  const starters: (() => Promise<Frontend>)[] = [];
  const config = ctx.triton.config;
  // Triton's start-up lines (the gRPC frontend logs its own).
  const logged = (start: () => Promise<Frontend>, service: string, address: string) => async (): Promise<Frontend> => {
    const frontend = await start();
    ctx.logger.info(`Started ${service} at ${address}:${frontend.port}`);
    return frontend;
  };
  const httpAddress = config.httpAddress ?? '0.0.0.0';
  if (config.allowHttp ?? true) starters.push(logged(() => startHttpFrontend(ctx), 'HTTPService', httpAddress));
  if (config.allowGrpc ?? true) starters.push(() => startGrpcFrontend(ctx));
  if (config.allowMetrics ?? true) {
    starters.push(logged(() => startMetricsFrontend(ctx), 'Metrics Service', config.metricsAddress ?? httpAddress));
  }
  try {
    for (const start of starters) started.push(await start());
  } catch (err) {
    await Promise.all(started.map((f) => f.close()));
    throw err;
  }
  return started;
}
