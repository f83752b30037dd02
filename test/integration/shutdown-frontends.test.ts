/**
 * Refusing new requests while the server exits, seen through both frontends at once: one state
 * (`ServerContext.exiting`) and one refusal (ts/server/exiting.ts), so a new HTTP inference and a
 * new gRPC inference are refused the same way — UNAVAILABLE (HTTP 503, gRPC 14) with Triton's text
 * naming the frontend — while the request already executing finishes normally.
 */
import { status } from '@grpc/grpc-js';
import { Triton } from '../../ts/triton';
import { Recorder, track, waitFor } from './helpers';
import { closeAgent, post, RawConnection, rawPost } from './http/http-helpers';
import { fp32Bytes, rawStub, unary } from './grpc/helpers';

/** Triton's text (server src/grpc/infer_handler.cc, stream_infer_handler.cc), and its HTTP twin. */
const GRPC_REFUSAL = 'GRPC server is shutting down and has stopped accepting new requests.';
const HTTP_REFUSAL = 'HTTP server is shutting down and has stopped accepting new requests.';

const IN = { name: 'IN', dtype: 'FP32', shape: [1] } as const;
const OUT = { name: 'OUT', dtype: 'FP32', shape: [1] } as const;
const httpBody = (tag: number): string => JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [tag] }] });
const grpcRequest = (model: string, tag: number): unknown => ({
  model_name: model, inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [fp32Bytes([tag])],
});

afterAll(() => closeAgent());

test('while stop() drains: new HTTP and gRPC inferences get the same UNAVAILABLE, the in-flight one completes', async () => {
  const held = new Recorder();
  const fast = new Recorder();
  const triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false, logInfo: false,
    },
  });
  triton.bind({ modelName: 'held', inferFunc: held.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
  triton.bind({ modelName: 'fast', inferFunc: fast.func, inputs: [IN], outputs: [OUT], config: { maxBatchSize: 1 } });
  await triton.run();
  const { http: httpPort, grpc: grpcPort } = triton.ports;
  const stub = rawStub(grpcPort!);
  // A keep-alive connection the server still serves after it stops accepting connections: it is
  // in the middle of a request (its body not sent yet) when stop() begins. The interim
  // "100 Continue" says the server has read that request's headers.
  const busy = new RawConnection(httpPort!);
  try {
    expect((await unary(stub, 'ModelInfer', grpcRequest('fast', 1))).error).toBeUndefined();  // the channel is up
    busy.write(rawPost('/v2/repository/index', '', { 'Content-Type': 'application/json', 'Content-Length': 2, Expect: '100-continue' }));
    expect((await busy.next())!.status).toBe(100);

    const release = held.hold();
    const inFlight = post(httpPort!, '/v2/models/held/infer', httpBody(7));
    await waitFor(() => held.active === 1, 'the held request to execute');
    const stopping = track(triton.stop());

    // A new gRPC inference on the open channel.
    const grpcRefused = await unary(stub, 'ModelInfer', grpcRequest('fast', 2));
    // A new HTTP inference on the busy connection, behind the request it was in the middle of.
    busy.write(Buffer.concat([Buffer.from('{}'), rawPost('/v2/models/fast/infer', httpBody(3))]));
    expect((await busy.next())!.status).toBe(200);  // the repository index it was sending
    const httpRefused = (await busy.next())!;

    expect(held.active).toBe(1);  // all of this while the held request still executes
    expect(stopping.settled).toBe(false);
    expect({ code: grpcRefused.error?.code, details: grpcRefused.error?.details }).toEqual({ code: status.UNAVAILABLE, details: GRPC_REFUSAL });
    expect({ status: httpRefused.status, error: httpRefused.error }).toEqual({ status: 503, error: HTTP_REFUSAL });
    // The same refusal: one text, naming the frontend that refuses.
    expect(httpRefused.error!.replace(/^HTTP /, '')).toBe(grpcRefused.error!.details.replace(/^GRPC /, ''));
    expect(fast.tagOrder).toEqual([1]);  // neither refused request reached the model

    release.open();
    const done = await inFlight;
    expect(done.status).toBe(200);
    expect(done.json().outputs).toEqual([{ name: 'OUT', datatype: 'FP32', shape: [1, 1], data: [7] }]);
    expect(await stopping.promise).toBe(true);
  } finally {
    busy.destroy();
    stub.close();
    await triton.stop();
  }
});
