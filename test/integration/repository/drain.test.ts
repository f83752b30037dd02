/**
 * Stopping a server that serves a repository (issue 16, items 6 and 12):
 * - while it drains, a request for a model it had is refused as retryable (HTTP 503 / gRPC
 *   UNAVAILABLE, "Server is shutting down"), never 404 "unknown model", even once the model was
 *   withdrawn; names it never had still get 404; requests in flight finish;
 * - a load that never finishes cannot hold stop() past exitTimeoutSecs.
 * Real server on loopback (HTTP and gRPC on free ports), real JS models of a real repository.
 */
import { status, type ClientDuplexStream } from '@grpc/grpc-js';
import * as http from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Triton } from '../../../ts/triton';
import { expectRejects, fp32, gate, waitFor, type Gate } from '../helpers';
import { fp32Bytes, rawStub, unary } from '../grpc/helpers';
import { TempRepo, repoTriton } from './repo-helpers';

/** What the test models share with the test (they run in this realm). */
interface DrainEvents {
  entered: number;
  gate: Gate;
  initializing: boolean;
}

declare global {
  var __drainEvents: DrainEvents | undefined;
}

const CONFIG = `backend: "js"
  max_batch_size: 0
  input [ { name: "IN", data_type: TYPE_FP32, dims: [ 1 ] } ]
  output [ { name: "OUT", data_type: TYPE_FP32, dims: [ 1 ] } ]
  instance_group [ { count: 4, kind: KIND_CPU } ]`;

/** Echoes IN once the test opens the gate. */
const SLOW = `
exports.execute = async (requests) => {
  globalThis.__drainEvents.entered += requests.length;
  await globalThis.__drainEvents.gate.promise;
  return requests.map((r) => ({ OUT: r.data.IN }));
};`;

/** initialize never resolves: its load hangs. */
const HANGING = `
exports.initialize = () => {
  globalThis.__drainEvents.initializing = true;
  return new Promise(() => {});
};
exports.execute = (requests) => requests.map((r) => ({ OUT: r.data.IN }));`;

let repo: TempRepo;
let events: DrainEvents;
const stoppers: Triton[] = [];

beforeEach(() => {
  repo = new TempRepo('drain');
  events = { entered: 0, gate: gate(), initializing: false };
  globalThis.__drainEvents = events;
});

afterEach(async () => {
  events.gate.open();
  await Promise.all(stoppers.splice(0).map((t) => t.stop()));
  delete globalThis.__drainEvents;
  repo.cleanup();
});

const SHUTTING_DOWN = /Server is shutting down: model 'slow' no longer accepts requests here; retry on another server/;

const grpcRequest = (model: string) => ({
  model_name: model, inputs: [{ name: 'IN', datatype: 'FP32', shape: [1] }], raw_input_contents: [fp32Bytes([7])],
});
const httpBody = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [7] }] });

/**
 * An HTTP inference whose headers the server has taken (the handler ran) but whose body is held
 * back: `Expect: 100-continue` makes Node's server answer "100 Continue" and run the handler
 * at once; the body goes out when `send()` is called.
 */
async function heldBackRequest(port: number, model: string): Promise<{ send(): Promise<{ status: number; error: string }> }> {
  const req = http.request({
    host: '127.0.0.1', port, method: 'POST', path: `/v2/models/${model}/infer`,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(httpBody), Expect: '100-continue' },
  });
  const answer = new Promise<{ status: number; error: string }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, error: (JSON.parse(text) as { error?: string }).error ?? '' });
      });
    });
    req.on('error', reject);
  });
  const continued = new Promise<void>((resolve) => req.once('continue', () => resolve()));
  req.flushHeaders();
  await continued;
  return {
    send: () => {
      req.end(httpBody);
      return answer;
    },
  };
}

function httpInfer(port: number, model: string): Promise<{ status: number; text: string }> {
  return fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: httpBody })
    .then(async (r) => ({ status: r.status, text: await r.text() }));
}

describe('late requests while the server drains', () => {
  test('HTTP, gRPC and in-process requests for a model being unloaded get UNAVAILABLE, never 404; unknown names 404', async () => {
    repo.config('slow', CONFIG);
    repo.write('slow/1/model.js', SLOW);
    const { triton } = repoTriton(repo.root, {
      config: {
        httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowHttp: true, allowGrpc: true,
        logInfo: false,
      },
    });
    stoppers.push(triton);
    await triton.run();
    const { http: httpPort, grpc: grpcPort } = triton.ports;
    const stub = rawStub(grpcPort!);
    try {
      // Requests on their way: two executing (held by the model), two whose bodies are not there yet.
      const inFlightHttp = httpInfer(httpPort!, 'slow');
      const inFlightGrpc = unary(stub, 'ModelInfer', grpcRequest('slow'));
      await waitFor(() => events.entered === 2, 'both requests to execute');
      const lateHttp = await heldBackRequest(httpPort!, 'slow');
      const lateUnknown = await heldBackRequest(httpPort!, 'never_had');
      const stream = stub.ModelStreamInfer() as ClientDuplexStream<unknown, Record<string, unknown>>;
      const streamed: Record<string, unknown>[] = [];
      stream.on('data', (m: Record<string, unknown>) => streamed.push(m));
      stream.on('error', () => undefined);
      // The stream is open on the server before the stop (an unknown name answers at once).
      stream.write(grpcRequest('never_had'));
      await waitFor(() => streamed.length === 1, 'the stream to open');
      expect(streamed[0].error_message).toContain("'never_had'");

      const stopping = triton.stop();
      // The model is withdrawn while its in-flight requests finish.
      await waitFor(() => !triton.repositoryIndex().some((e) => e.name === 'slow' && e.state === 'READY'), 'slow to be withdrawn');

      const late = await lateHttp.send();
      expect(late.status).toBe(503);
      expect(late.error).toMatch(SHUTTING_DOWN);
      const unknown = await lateUnknown.send();
      expect(unknown.status).toBe(404);
      expect(unknown.error).toContain("'never_had'");

      await expectRejects(triton.infer('slow', { IN: fp32(1) }), 'UNAVAILABLE', SHUTTING_DOWN);
      await expectRejects(triton.infer('never_had', { IN: fp32(1) }), 'NOT_FOUND');

      const grpcLate = await unary(stub, 'ModelInfer', grpcRequest('slow'));
      expect(grpcLate.error?.code).toBe(status.UNAVAILABLE);
      expect(grpcLate.error?.details).toMatch(/shutting down/i);
      stream.write(grpcRequest('slow'));
      await waitFor(() => streamed.length === 2, 'the stream to answer');
      expect(streamed[1].error_message).toMatch(/shutting down/i);

      events.gate.open();
      expect((await inFlightHttp).status).toBe(200);
      expect((await inFlightGrpc).error).toBeUndefined();
      expect(await stopping).toBe(true);
      stream.end();
    } finally {
      stub.close();
    }
  });

  test('40 gRPC requests racing a stop: each succeeds or gets UNAVAILABLE, none NOT_FOUND', async () => {
    repo.config('slow', CONFIG);
    repo.write('slow/1/model.js', SLOW);
    const { triton } = repoTriton(repo.root, {
      config: { grpcAddress: '127.0.0.1', grpcPort: 0, allowGrpc: true, logInfo: false },
    });
    stoppers.push(triton);
    await triton.run();
    const stub = rawStub(triton.ports.grpc!);
    try {
      events.gate.open();
      const first = unary(stub, 'ModelInfer', grpcRequest('slow'));
      const calls: ReturnType<typeof unary>[] = [first];
      let stopping: Promise<boolean> | null = null;
      // The stop begins while the others are being sent.
      for (let i = 0; i < 39; i++) {
        if (i === 20) stopping = triton.stop();
        calls.push(unary(stub, 'ModelInfer', grpcRequest('slow')));
        await new Promise((resolve) => setImmediate(resolve));
      }
      const results = await Promise.all(calls);
      for (const r of results) {
        if (r.error) {
          // Refused by the draining server, or by the closed port once it stopped (Triton's too).
          expect(r.error.code).toBe(status.UNAVAILABLE);
          expect(r.error.details).toMatch(/shutting down|ECONNREFUSED/i);
        }
      }
      expect(await stopping).toBe(true);
    } finally {
      stub.close();
    }
  });
});

describe('a load that never finishes', () => {
  test('stop() settles after exitTimeoutSecs, logs Triton\'s exit-timeout line and reports it', async () => {
    repo.config('hang', CONFIG.replace('count: 4', 'count: 1'));
    repo.write('hang/1/model.js', HANGING);
    const logFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'infernode-drain-')), 'log.txt');
    const { triton } = repoTriton(repo.root, { controlMode: 'explicit', config: { exitTimeoutSecs: 1, logFile } });
    await triton.run();
    const load = triton.loadModel('hang').catch((err: unknown) => err);
    await waitFor(() => events.initializing, 'initialize to be entered');
    expect(await triton.stop()).toBe(true);
    expect(triton.exitTimeoutExpired).toBe(true);
    expect(readFileSync(logFile, 'utf8')).toContain('Exit timeout expired. Exiting immediately.');
    void load;
  });

  test('a stop in time does not report an expired exit timeout', async () => {
    repo.config('slow', CONFIG);
    repo.write('slow/1/model.js', SLOW);
    const { triton } = repoTriton(repo.root, { config: { exitTimeoutSecs: 30 } });
    await triton.run();
    expect(await triton.stop()).toBe(true);
    expect(triton.exitTimeoutExpired).toBe(false);
  });
});
