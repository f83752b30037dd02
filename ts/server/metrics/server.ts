/**
 * The metrics frontend on `metricsPort` (default 8002): `GET /metrics` (a trailing slash is
 * allowed) answers Prometheus text with Triton's metric names: the per-model families
 * (model-metrics.ts, which writes their text), then a prom-client Registry of this Triton's own
 * (several servers can share a process, as the test suites do), then the process metrics
 * (prom-client's default metrics: CPU time, memory, event-loop lag, GC).
 *
 * The process metrics live in one registry per process, created by the first metrics frontend:
 * they describe the process, and prom-client's collectors for them (a GC observer, an
 * event-loop delay monitor) cannot be stopped, so one set per process is the right count.
 */
import * as http from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { invalidArg } from '../../errors';
import type { ServerContext } from '../context';
import type { Frontend } from '../frontend';
import { httpFrontend, listen } from '../http/listener';
import { sendError, sendJson } from '../http/respond';
import { parseMetricsConfig } from './config';
import { startGpuMetrics } from './gpu';
import { ModelMetrics } from './model-metrics';
import { startPinnedMetrics } from './pinned';
import { startSystemMetrics } from './system';

/** Triton's content type for the metrics text. */
const CONTENT_TYPE = 'text/plain; charset=utf-8';

let processRegistry: Registry | null = null;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** The metrics of one Triton: its registry, and how to scrape it. */
export interface TritonMetrics {
  registry: Registry;
  models: ModelMetrics;
  /** The Prometheus text of a scrape (this Triton's metrics, then the process metrics). */
  scrape(): Promise<string>;
  stop(): void;
}

/**
 * Builds the registry of `ctx`'s Triton and has its models report their requests to the
 * per-model metrics (which observe them only when summaries or the histogram are on).
 * Resolves once the GPUs were read the first time, so the first scrape has the GPU families.
 */
export async function createTritonMetrics(ctx: ServerContext): Promise<TritonMetrics> {
  const config = ctx.triton.config;
  const settings = parseMetricsConfig(config.metricsConfig, (line) => ctx.logger.error(line));
  const interval = config.metricsIntervalMs ?? 2000;
  if (!Number.isSafeInteger(interval) || interval <= 0) throw invalidArg(`metricsIntervalMs must be a positive integer, got ${interval}`);
  const registry = new Registry();
  const models = new ModelMetrics(ctx.triton, settings, (line) => ctx.logger.warning(line));
  const stopSystem = (config.allowCpuMetrics ?? true) ? startSystemMetrics(registry, interval) : () => undefined;
  const stopPinned = startPinnedMetrics(registry, interval);
  ctx.triton.reportRequestsTo((model) => models.sinkFor(model));
  const stopOwn = (): void => {
    stopSystem();
    stopPinned();
    ctx.triton.reportRequestsTo(null);
  };
  let stopGpu: () => void = () => undefined;
  try {
    if (config.allowGpuMetrics ?? true) stopGpu = await startGpuMetrics(registry, interval, ctx.logger);
  } catch (err) {
    stopOwn();
    throw err;
  }
  const process = processMetrics();
  return {
    registry,
    models,
    scrape: async () => {
      models.refresh();
      const [perModel, own, shared] = await Promise.all([models.text(), registry.metrics(), process.metrics()]);
      return `${perModel}${own}\n${shared}`;
    },
    stop: () => {
      stopGpu();
      stopOwn();
    },
  };
}

/** Starts the metrics frontend (TritonConfig metricsAddress/metricsPort; port 0 picks one). */
export async function startMetricsFrontend(ctx: ServerContext): Promise<Frontend> {
  const config = ctx.triton.config;
  const metrics = await createTritonMetrics(ctx);
  const server = http.createServer({ noDelay: true }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics' && path !== '/metrics/') return sendJson(res, 404, { error: 'Not Found' });
    if (req.method !== 'GET') return sendJson(res, 405, { error: 'Method Not Allowed' });
    metrics.scrape().then((text) => {
      res.writeHead(200, { 'Content-Type': CONTENT_TYPE });
      res.end(text);
    }, (err: unknown) => sendError(req, res, err, ctx.logger));
  });
  let port: number;
  try {
    port = await listen(server, config.metricsPort ?? 8002, config.metricsAddress ?? config.httpAddress ?? '0.0.0.0', 'metrics frontend');
  } catch (err) {
    metrics.stop();
    throw err;
  }
  const frontend = httpFrontend('metrics', server, port);
  return {
    ...frontend,
    close: async () => {
      metrics.stop();
      await frontend.close();
    },
  };
}
