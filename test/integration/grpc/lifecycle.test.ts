/**
 * Server-level behaviour of the gRPC frontend: restricted protocol groups (Triton's
 * --grpc-restricted-protocol), graceful shutdown (new calls refused with Triton's message while
 * accepted ones finish, idle streams ended), and the server options taken from TritonConfig.
 */
import { Metadata, status, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import { mkdtempSync, readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GRPC_MAX_MESSAGE_SIZE, grpcServerOptions } from '../../../ts/server/grpc/server';
import { NDArray } from '../../../ts/tensor';
import { gate, Recorder, waitFor } from '../helpers';
import { bindStandardModels, fails, fp32Bytes, grpcTriton, ok, rawStub, serve, unary, type Served } from './helpers';

/** Triton's text (server src/grpc/infer_handler.cc) for calls after shutdown began. */
const SHUTTING_DOWN = 'GRPC server is shutting down and has stopped accepting new requests.';

const ONE = { model_name: 'identity', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [fp32Bytes([1])] };

describe('restricted protocol groups', () => {
  const restricted = "This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'";

  test('each RPC of a restricted group needs its header with the right value; other groups stay open', async () => {
    const s = await serve(bindStandardModels, { grpcRestrictedProtocol: 'inference,model-config:infer-key=secret;health:probe=yes' });
    try {
      await fails(s.stub, 'ModelInfer', ONE, status.UNAVAILABLE, restricted);
      await fails(s.stub, 'ModelInfer', ONE, status.UNAVAILABLE, restricted, { 'triton-grpc-protocol-infer-key': 'wrong' });
      await fails(s.stub, 'ModelConfig', { name: 'identity' }, status.UNAVAILABLE, restricted);
      await fails(s.stub, 'ServerLive', {}, status.UNAVAILABLE, "expecting header 'triton-grpc-protocol-probe'");
      const granted = { 'triton-grpc-protocol-infer-key': 'secret' };
      expect((await ok(s.stub, 'ModelInfer', ONE, granted)).raw_output_contents).toEqual([fp32Bytes([1])]);
      expect((await ok(s.stub, 'ModelConfig', { name: 'identity' }, granted)).config).toBeDefined();
      expect(await ok(s.stub, 'ServerLive', {}, { 'triton-grpc-protocol-probe': 'yes' })).toEqual({ live: true });
      expect((await ok(s.stub, 'ServerMetadata', {})).name).toBe('triton');

      const health = rawStub(s.port, 'grpc.health.v1.Health');
      await fails(health, 'Check', {}, status.UNAVAILABLE, "expecting header 'triton-grpc-protocol-probe'");
      expect(await ok(health, 'Check', {}, { 'triton-grpc-protocol-probe': 'yes' })).toEqual({ status: 'SERVING' });
      health.close();

      const stream = s.stub.ModelStreamInfer(new Metadata()) as ClientDuplexStream<unknown, unknown>;
      stream.on('error', () => undefined);
      const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
      stream.write(ONE);
      const final = await ended;
      expect(final.code).toBe(status.UNAVAILABLE);
      expect(final.details).toBe(restricted);
    } finally {
      await s.close();
    }
  });

  test('a malformed restriction fails run() naming the flag', async () => {
    const t = grpcTriton({ grpcRestrictedProtocol: 'inference:no-value' });
    await expect(t.run()).rejects.toThrow("--grpc-restricted-protocol: 'inference:no-value' must look like");
    await t.stop();
  });
});

/** A ModelStreamInfer call that collects its answers, and its final status. */
function collectingStream(stub: Served['stub']) {
  const stream = stub.ModelStreamInfer(new Metadata()) as ClientDuplexStream<unknown, Record<string, unknown>>;
  stream.on('error', () => undefined);  // the status says how it ended
  const answers: Record<string, unknown>[] = [];
  stream.on('data', (m: Record<string, unknown>) => answers.push(m));
  const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
  return { stream, answers, ended };
}

/** Request `i` (its id) for model 'held': one row of `width` values `i`. */
function heldRequest(i: number, width: number) {
  return {
    model_name: 'held', id: String(i),
    inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, width] }], raw_input_contents: [fp32Bytes(new Array(width).fill(i))],
  };
}

describe('graceful shutdown', () => {
  test('new calls get UNAVAILABLE with Triton\'s message, accepted ones finish, idle streams end', async () => {
    const held = new Recorder();
    const s = await serve((t) => {
      bindStandardModels(t);
      t.bind({
        modelName: 'held', inferFunc: held.func, config: { batching: false },
        inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
      });
    });
    const gate = held.hold();
    const inFlight = unary(s.stub, 'ModelInfer', { ...ONE, model_name: 'held', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1] }] });
    await waitFor(() => held.active === 1, 'the request to run');
    const idle = s.stub.ModelStreamInfer(new Metadata()) as ClientDuplexStream<unknown, unknown>;
    idle.on('error', () => undefined);
    const idleEnded = new Promise<StatusObject>((resolve) => idle.on('status', resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));

    const stopping = s.triton.stop();
    await fails(s.stub, 'ServerLive', {}, status.UNAVAILABLE, SHUTTING_DOWN);
    await fails(s.stub, 'ModelInfer', ONE, status.UNAVAILABLE, SHUTTING_DOWN);
    gate.open();
    const done = await inFlight;
    expect(done.error).toBeUndefined();
    expect(done.response?.raw_output_contents).toEqual([fp32Bytes([1])]);
    await stopping;
    const final = await idleEnded;
    expect(final.code).toBe(status.UNAVAILABLE);
    expect(final.details).toBe(SHUTTING_DOWN);
    s.stub.close();
  });

  test.each([
    ['half-closed by the client before stop(): it ends with OK', 'before', status.OK],
    ['left open by the client: it ends with UNAVAILABLE after them', 'never', status.UNAVAILABLE],
  ] as const)('a stream\'s accepted requests are all answered when stop() comes while a batch completes; %s', async (_, halfClose, code) => {
    const held = new Recorder();
    const s = await serve((t) => {
      bindStandardModels(t);
      t.bind({
        modelName: 'held', inferFunc: held.func, config: { maxBatchSize: 256 },
        inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      });
    });
    const N = 200;
    // 16 KiB answers (3.2 MB): they take many turns of pacing (without answerPace.flushed() in
    // close, 1 of 200 arrives), and the stream's status comes while the client is still taking
    // them in (failing the stream as soon as close() began lost the tail: a grpc-js client drops
    // the messages it has not delivered when a non-OK status arrives).
    const width = 4096;
    const gate = held.hold();
    const { stream, answers, ended } = collectingStream(s.stub);
    const req = (i: number) => heldRequest(i, width);
    stream.write(req(0));
    await waitFor(() => held.active === 1, 'the first request to run');
    for (let i = 1; i < N; i++) stream.write(req(i));
    if (halfClose === 'before') stream.end();
    // All accepted (read and queued behind the held batch) before stop: a request read after stop
    // began is refused, as Triton refuses it.
    await waitFor(() => s.triton.model('held').stats().queued === N - 1, 'every request to be queued');
    const stopping = s.triton.stop();
    gate.open();
    await stopping;
    const final = await ended;
    s.stub.close();
    const errors = answers.filter((a) => a.error_message);
    expect({ answered: answers.length - errors.length, errors: errors.length, code: final.code })
      .toEqual({ answered: N, errors: 0, code });
    if (halfClose === 'never') expect(final.details).toBe(SHUTTING_DOWN);
  });

  test('a stopping stream keeps reading: requests sent after the models drained are refused in band, and the half-close behind them ends the stream OK', async () => {
    const release = gate();
    let started = 0;
    // 4 KiB answers to 8-byte requests (400 KB): several times what HTTP/2's windows let through
    // to a client that does not read (about 40 KB here), little enough to take in well within the
    // server's 2 s close grace on a loaded machine.
    const width = 1024;
    const s = await serve((t) => {
      bindStandardModels(t);
      t.bind({
        modelName: 'held', config: { maxBatchSize: 256 },
        inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
        inferFunc: async (requests) => {
          started++;
          await release.promise;
          return requests.map(() => ({ OUT: new NDArray('FP32', [1, width], new Float32Array(width)) }));
        },
      });
    });
    const N = 100;
    const late = 10;
    const { stream, answers, ended } = collectingStream(s.stub);
    const req = (i: number) => heldRequest(i, 1);
    stream.write(req(0));
    await waitFor(() => started === 1, 'the first request to run');
    for (let i = 1; i < N; i++) stream.write(req(i));
    await waitFor(() => s.triton.model('held').stats().pending === N, 'every request to be taken');
    // The client reads nothing for now: its answers stay in flight (HTTP/2 flow control), so the
    // stream is still open with answers to send when the models have drained and stop() closes it.
    stream.pause();
    const stopping = s.triton.stop();
    release.open();
    await waitFor(() => s.triton.model('held').stats().inferenceCount === N, 'every request to run');
    // Let stop() reach the streams (after the answers' pacing): requests arriving before that are
    // refused too, so a slow machine only makes this test weaker, never wrong.
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (let i = N; i < N + late; i++) stream.write(req(i));
    // Once the half-close has gone to the transport, the late requests and it are on the
    // connection ahead of the window updates that resume() will send: the server reads them
    // before it can write the answers still held back.
    await new Promise<void>((resolve) => stream.end(resolve));
    stream.resume();
    await stopping;
    const final = await ended;
    s.stub.close();
    const refused = answers.filter((a) => a.error_message);
    expect({ answered: answers.length - refused.length, refused: refused.length, code: final.code })
      .toEqual({ answered: N, refused: late, code: status.OK });
    expect(new Set(refused.map((a) => a.error_message))).toEqual(new Set([SHUTTING_DOWN]));
    expect(refused.map((a) => Number((a.infer_response as { id: string }).id)).sort((x, y) => x - y))
      .toEqual(Array.from({ length: late }, (_, i) => N + i));
  });
});

describe('server options', () => {
  test('Triton\'s defaults: 2^31-1 byte messages both ways, keepalive 2 h / 20 s, 2 pings without data', () => {
    expect(grpcServerOptions({})).toMatchObject({
      'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_SIZE,
      'grpc.max_send_message_length': GRPC_MAX_MESSAGE_SIZE,
      'grpc.keepalive_time_ms': 7_200_000,
      'grpc.keepalive_timeout_ms': 20_000,
      'grpc.keepalive_permit_without_calls': 0,
      'grpc.http2.max_pings_without_data': 2,
    });
    expect(GRPC_MAX_MESSAGE_SIZE).toBe(2147483647);
  });

  test('configured values, and refusals of impossible ones', () => {
    expect(grpcServerOptions({
      grpcMaxMessageSize: 1000, grpcKeepaliveTime: 10_000, grpcKeepaliveTimeout: 500, grpcKeepalivePermitWithoutCalls: true,
      grpcHttp2MaxPingsWithoutData: 0,
    })).toMatchObject({
      'grpc.max_receive_message_length': 1000, 'grpc.max_send_message_length': 1000, 'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 500, 'grpc.keepalive_permit_without_calls': 1, 'grpc.http2.max_pings_without_data': 0,
    });
    expect(() => grpcServerOptions({ grpcMaxMessageSize: 2 ** 31 })).toThrow('grpcMaxMessageSize must be an integer in 1..2147483647');
    expect(() => grpcServerOptions({ grpcKeepaliveTime: 0 })).toThrow('grpcKeepaliveTime must be an integer');
  });

  test('an invalid header-forward pattern fails run(); a compression level is accepted with a warning', async () => {
    const bad = grpcTriton({ grpcHeaderForwardPattern: '(' });
    await expect(bad.run()).rejects.toThrow("grpcHeaderForwardPattern '(' is not a valid regular expression");
    await bad.stop();
    const logFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'infernode-grpc-')), 'log.txt');
    const s = await serve(bindStandardModels, { grpcInferResponseCompressionLevel: 'high', logFile });
    try {
      expect((await ok(s.stub, 'ModelInfer', ONE)).raw_output_contents).toEqual([fp32Bytes([1])]);
    } finally {
      await s.close();
    }
    expect(readFileSync(logFile, 'utf8')).toContain("grpcInferResponseCompressionLevel 'high' is not supported by grpc-js");
  });

  test('two servers cannot share a port: run() fails saying where', async () => {
    const s = await serve();
    const clash = grpcTriton({ grpcPort: s.port });
    try {
      await expect(clash.run()).rejects.toThrow(`gRPC frontend cannot listen on 127.0.0.1:${s.port}`);
    } finally {
      await clash.stop();
      await s.close();
    }
  });
});
