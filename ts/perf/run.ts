/**
 * `infernode perf`: reads the model's metadata and config, builds its requests, measures each
 * concurrency or request rate, prints perf_analyzer's report on stdout, and writes the CSV and
 * its SVG chart with -f. A progress line goes to stderr while it runs, only when stderr is a
 * terminal. Every failure is a PerfError whose message says what to do; the CLI prints it and
 * exits 1.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { InferenceServerError } from '../errors';
import { measureLevel, type LevelResult } from './measure';
import { checkBatchSize, modelShape, PerfInputError, requestInputs } from './model-inputs';
import { checkOptions, rangeValues, type PerfOptions } from './options';
import { chartSvg, clientLibrary, composingCsvs, csvText, levelHeader, levelText, passText, summaryText, type Mode } from './report';
import { findComposingModels } from './server-stats';
import { openTarget, type PerfTarget } from './target';

export class PerfError extends Error {}

export interface PerfOutput {
  out: (text: string) => void;
  /** Warnings (unstable levels). */
  warn: (text: string) => void;
  /** The progress line; absent when stderr is not a terminal. */
  progress?: (text: string | null) => void;
}

export interface PerfSummary {
  mode: Mode;
  results: LevelResult[];
  /** Requests sent (and answered) over the whole run, warm-up windows included. */
  requestsSent: number;
  files: string[];
}

/** The model's failure to answer, as perf explains it. */
function describeFailure(err: unknown, target: PerfTarget, o: PerfOptions, doing: string): PerfError {
  if (err instanceof PerfInputError) return new PerfError(err.message);
  if (!(err instanceof InferenceServerError)) return new PerfError(`${doing}: ${(err as Error).message}`);
  if (err.code === 'UNAVAILABLE' && target.kind !== 'in-process' && /reach|connect|ECONNREFUSED|No connection/i.test(err.message)) {
    const detail = err.message.replace(/^cannot reach the server at \S+: /, '');
    return new PerfError(`cannot reach the ${target.kind} server at ${target.where} (${detail}) [${err.code}]. ` +
      `Is it running, and do -u and -i name its ${target.kind.startsWith('gRPC') ? 'gRPC' : 'HTTP'} endpoint?`);
  }
  return new PerfError(`${doing} of model '${o.modelName}' (${target.kind}, ${target.where}): ${err.message} [${err.code}]`);
}

/** The -f files: the CSV, and the chart beside it (results.csv → results.svg). */
function chartPath(csv: string): string {
  const ext = path.extname(csv);
  return `${ext ? csv.slice(0, -ext.length) : csv}.svg`;
}

/**
 * A composing model's CSV, beside the CSV: `<name>_v<version>.<file name>` (results.csv →
 * add_v1.results.csv). perf_analyzer puts the prefix before the whole -f path, so a path with a
 * directory there names another directory; perf keeps the file beside the CSV.
 */
function composingCsvPath(csv: string, name: string, version: string): string {
  return path.join(path.dirname(csv), `${name}_v${version}.${path.basename(csv)}`);
}

function settingsText(o: PerfOptions, target: PerfTarget, mode: Mode, decoupled: boolean): string {
  return [
    '*** Measurement Settings ***',
    `  Batch size: ${o.batchSize}`,
    `  Service Kind: ${target.kind} (${target.where})`,
    '  Using "time_windows" mode for stabilization',
    `  Stabilizing using ${o.percentile === undefined ? 'average' : `p${o.percentile}`} latency and throughput`,
    `  Measurement window: ${o.measurementIntervalMs} msec`,
    `  Stability: the last 3 windows within ${o.stabilityPercentage}%, at most ${o.maxTrials} windows`,
    ...(mode === 'rate' ? [`  Using ${o.requestDistribution === 'poisson' ? 'poisson' : 'uniform'} distribution on request generation`] : []),
    mode === 'concurrency' ? '  Using asynchronous calls for inference (one closed loop per concurrent request)'
      : '  Using asynchronous calls for inference (requests sent on the schedule, whether or not earlier ones answered)',
    ...(decoupled ? ['  Detected decoupled model, using the last response of each request for measuring latency'] : []),
    '',
  ].join('\n');
}

export async function runPerf(o: PerfOptions, io: PerfOutput): Promise<PerfSummary> {
  checkOptions(o);
  let target: PerfTarget;
  try {
    target = await openTarget(o);
  } catch (err) {
    throw new PerfError(`${o.inProcess ? '--in-process' : '-u'}: ${(err as Error).message}`);
  }
  try {
    return await runOnTarget(target, o, io);
  } finally {
    await target.close();
  }
}

/** The measurement and its report on an open target (runPerf's work once the target is open; the caller closes it). */
export async function runOnTarget(target: PerfTarget, o: PerfOptions, io: PerfOutput): Promise<PerfSummary> {
  const mode: Mode = o.requestRateRange ? 'rate' : 'concurrency';
  const levels = rangeValues(o.requestRateRange ?? o.concurrencyRange ?? { start: 1, end: 1, step: 1 });
  let inputSets;
  let shape;
  let composition;
  try {
    const config = await target.modelConfig();
    shape = modelShape(await target.modelMetadata(), config);
    // An ensemble's steps (recursively) and --bls-composing-models, as perf_analyzer's ModelParser finds them.
    composition = await findComposingModels(o.modelName, config, o.blsComposingModels ?? [], (name, version) => target.configOf(name, version));
    if (shape.decoupled && !o.streaming && !o.inProcess) {
      throw new PerfInputError(`model '${o.modelName}' is decoupled (0..N responses per request): measure it with -i grpc --streaming`);
    }
    checkBatchSize(o.modelName, shape, o.batchSize);
    inputSets = requestInputs({
      model: o.modelName, shape, shapes: o.shapes, inputData: o.inputData, batchSize: o.batchSize, stringLength: o.stringLength,
    });
  } catch (err) {
    throw describeFailure(err, target, o, 'reading the metadata and config');
  }
  io.out(settingsText(o, target, mode, shape.decoupled));
  const report = {
    verbose: o.verbose, percentile: o.percentile, decoupled: shape.decoupled,
    responseCache: shape.responseCache || composition.responseCache, topLevelCache: composition.topLevelCache,
  };
  const composing = composition.map.size > 0 ? { model: o.modelName, version: o.modelVersion, map: composition.map } : undefined;
  const results: LevelResult[] = [];
  let requestsSent = 0;
  for (const value of levels) {
    const label = mode === 'concurrency' ? `concurrency ${value}` : `request rate ${value}`;
    let result: LevelResult;
    io.out(levelHeader(value, mode));
    try {
      result = await measureLevel(target, inputSets, value, {
        mode, distribution: o.requestDistribution, batchSize: o.batchSize, intervalMs: o.measurementIntervalMs, percentile: o.percentile,
        stabilityPercentage: o.stabilityPercentage, maxTrials: o.maxTrials, composition: composing,
        onWindow: (_, trial, window) => {
          if (o.verbose) io.out(passText(trial, window, o.batchSize, o.percentile));
          io.progress?.(`infernode perf: ${label}, window ${trial} of at most ${o.maxTrials}`);
        },
      });
    } catch (err) {
      throw describeFailure(err, target, o, `inference at ${label}`);
    } finally {
      io.progress?.(null);
    }
    requestsSent += result.sent;
    if (!result.stable) {
      io.warn(`infernode perf: failed to obtain a stable measurement within ${result.windows} measurement windows for ${label} ` +
        `(the last 3 must agree within ${o.stabilityPercentage}%); its numbers merge the last 3 windows. ` +
        'Increase --measurement-interval or --max-trials for steadier results.');
    }
    io.out(`${levelText(result, clientLibrary(target.kind), report)}\n`);
    results.push(result);
  }
  io.out(summaryText(results, mode, o.percentile));
  io.out(`Requests sent: ${requestsSent} (${requestsSent * o.batchSize} inferences, every one answered; measurement windows included ${results.reduce((s, r) => s + r.requestCount, 0)} of them)`);
  const files: string[] = [];
  if (o.latencyReportFile) {
    const svg = chartPath(o.latencyReportFile);
    try {
      mkdirSync(path.dirname(path.resolve(o.latencyReportFile)), { recursive: true });
      writeFileSync(o.latencyReportFile, csvText(results, mode, report));
      writeFileSync(svg, chartSvg(results, mode, o.percentile, `${o.modelName} (${target.kind})`));
      files.push(o.latencyReportFile, svg);
      // An ensemble's composing models: a CSV each, as perf_analyzer writes them.
      for (const c of composingCsvs(results, mode, report)) {
        const file = composingCsvPath(o.latencyReportFile, c.name, c.version);
        writeFileSync(file, c.text);
        files.push(file);
      }
    } catch (err) {
      throw new PerfError(`cannot write -f ${o.latencyReportFile}: ${(err as Error).message}`);
    }
    io.out(`Wrote ${files.join(', ').replace(/, ([^,]*)$/, ' and $1')}`);
  }
  return { mode, results, requestsSent, files };
}
