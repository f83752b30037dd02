/**
 * ModelStreamInfer: one response per request matched by id, in-band errors that keep the stream
 * open, the `triton_grpc_error` header that ends it with the status instead, many requests in
 * flight (read back-pressure), and streams closed mid-flight (queued requests removed).
 */
import { Client, Metadata, credentials, status, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import { decodeStreamResponse } from '../../../ts/server/grpc/infer-codec';
import { encodeInferRequest } from '../../../ts/server/grpc/infer-encode';
import type { Triton } from '../../../ts/triton';
import { Recorder, waitFor } from '../helpers';
import { bindStandardModels, fp32Bytes, ok, serve, type Served } from './helpers';

const held = new Recorder();

function bindModels(t: Triton): void {
  bindStandardModels(t);
  t.bind({
    modelName: 'held', inferFunc: held.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { batching: false },
  });
}

let s: Served;
beforeAll(async () => {
  s = await serve(bindModels);
});
afterAll(() => s.close());

type Response = { error_message: string; infer_response: Record<string, unknown> | null };

/** An open stream that records responses and its final status. */
function open(headers: Record<string, string> = {}) {
  const md = new Metadata();
  for (const [k, v] of Object.entries(headers)) md.set(k, v);
  const stream = s.stub.ModelStreamInfer(md) as ClientDuplexStream<unknown, Response>;
  const responses: Response[] = [];
  let errorEvent: (Error & { code?: number; details?: string }) | null = null;
  stream.on('data', (r: Response) => responses.push(r));
  stream.on('error', (e) => { errorEvent = e; });
  const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
  return { stream, responses, ended, error: () => errorEvent };
}

const request = (id: string, values: number[], model = 'identity') => ({
  model_name: model, id,
  // 'held' takes one unbatched FP32; 'identity' batches rows of any width.
  inputs: [{ name: 'IN', datatype: 'FP32', shape: model === 'held' ? [1] : [1, values.length] }],
  raw_input_contents: [fp32Bytes(values)],
});

test('one response per request, matched by id; half-close ends the stream with OK after the answers', async () => {
  const st = open();
  for (let i = 0; i < 5; i++) st.stream.write(request(`r${i}`, [i, i + 0.5]));
  st.stream.end();
  const final = await st.ended;
  expect(final.code).toBe(status.OK);
  expect(st.responses).toHaveLength(5);
  for (const r of st.responses) {
    expect(r.error_message).toBe('');
    const i = Number(String(r.infer_response!.id).slice(1));
    expect(r.infer_response).toMatchObject({ model_name: 'identity', model_version: '1', raw_output_contents: [fp32Bytes([i, i + 0.5])] });
  }
});

test('a failing request is answered in band with its id; the stream stays open for the next ones', async () => {
  const st = open();
  st.stream.write(request('good-1', [1]));
  st.stream.write(request('bad', [1], 'nope'));
  st.stream.write({ ...request('short', [1, 2]), raw_input_contents: [fp32Bytes([1])] });
  st.stream.write(request('good-2', [2]));
  st.stream.end();
  expect((await st.ended).code).toBe(status.OK);
  const byId = new Map(st.responses.map((r) => [r.infer_response?.id, r]));
  expect(byId.get('bad')?.error_message).toBe("Request for unknown model: 'nope' is not found");
  expect(byId.get('short')?.error_message).toContain("unexpected byte size for input 'IN' for model 'identity'");
  expect(byId.get('good-1')?.infer_response?.raw_output_contents).toEqual([fp32Bytes([1])]);
  expect(byId.get('good-2')?.infer_response?.raw_output_contents).toEqual([fp32Bytes([2])]);
});

test('with the triton_grpc_error header, the first error ends the stream with its status', async () => {
  const st = open({ triton_grpc_error: 'true' });
  st.stream.write(request('good', [1]));
  await waitFor(() => st.responses.length === 1, 'the first answer');
  st.stream.write(request('bad', [1], 'nope'));
  const final = await st.ended;
  expect(final.code).toBe(status.NOT_FOUND);
  expect(final.details).toBe("Request for unknown model: 'nope' is not found");
  expect(st.error()?.code).toBe(status.NOT_FOUND);
  expect(st.responses).toHaveLength(1);
});

test('thousands of requests in flight on one stream are all answered (reads pause and resume)', async () => {
  const st = open();
  const n = 3000;
  for (let i = 0; i < n; i++) st.stream.write(request(String(i), [i]));
  st.stream.end();
  expect((await st.ended).code).toBe(status.OK);
  expect(st.responses).toHaveLength(n);
  expect(new Set(st.responses.map((r) => r.infer_response?.id)).size).toBe(n);
});

test('a request on an open stream while the server drains is refused in band with its id (found by the soak)', async () => {
  const own = await serve(bindModels);
  const md = new Metadata();
  const stream = own.stub.ModelStreamInfer(md) as ClientDuplexStream<unknown, Response>;
  const responses: Response[] = [];
  stream.on('data', (r: Response) => responses.push(r));
  stream.on('error', () => undefined);  // the status below says how it ended
  const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
  const gate = held.hold();
  try {
    stream.write(request('running', [1], 'held'));
    await waitFor(() => held.active === 1, 'the first request to run (it keeps the server draining)');
    const stopping = own.triton.stop();
    stream.write(request('late', [2]));
    await waitFor(() => responses.length === 1, 'the refusal of the request sent after stop()');
    // Triton repopulates the id of a refused stream request "so that client knows which request failed".
    expect(responses[0].error_message).toBe('GRPC server is shutting down and has stopped accepting new requests.');
    expect(responses[0].infer_response?.id).toBe('late');
    gate.open();
    await waitFor(() => responses.length === 2, 'the running request\'s answer');
    expect(responses[1]).toMatchObject({ error_message: '', infer_response: { id: 'running' } });
    stream.end();
    await ended;
    await stopping;
  } finally {
    gate.open();
    own.stub.close();
    await own.triton.stop();
  }
});

test('a stream cancelled mid-flight: its queued request leaves the queue, the running one is dropped', async () => {
  const gate = held.hold();
  const calls = held.calls.length;
  const st = open();
  st.stream.write(request('run', [11], 'held'));
  await waitFor(() => held.active === 1, 'the first request to run');
  st.stream.write(request('queued', [12], 'held'));
  await waitFor(() => s.triton.model('held').pendingCount === 2, 'the second request to be queued');
  st.stream.cancel();
  expect((await st.ended).code).toBe(status.CANCELLED);
  await waitFor(() => s.triton.model('held').pendingCount === 1, 'the queued request to be removed');
  gate.open();
  await waitFor(() => s.triton.model('held').pendingCount === 0, 'the running request to be handed back');
  expect(held.calls.slice(calls).flatMap((c) => c.tags)).toEqual([11]);
  expect(await ok(s.stub, 'ServerLive', {})).toEqual({ live: true });
});

test('bytes that are not a ModelInferRequest are answered in band; the stream goes on', async () => {
  const client = new Client(`127.0.0.1:${s.port}`, credentials.createInsecure());
  const same = (b: Buffer): Buffer => b;
  const stream = client.makeBidiStreamRequest('/inference.GRPCInferenceService/ModelStreamInfer', same, same, new Metadata());
  const answers: Buffer[] = [];
  stream.on('data', (b: Buffer) => answers.push(b));
  const ended = new Promise<StatusObject>((resolve) => stream.on('status', resolve));
  stream.write(Buffer.from([0x3a, 100, 1, 2]));
  stream.write(encodeInferRequest({
    modelName: 'identity', id: 'after', inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1] }], outputs: [],
    rawInputContents: [fp32Bytes([5])],
  }));
  stream.end();
  expect((await ended).code).toBe(status.OK);
  client.close();
  const decoded = answers.map(decodeStreamResponse);
  expect(decoded).toHaveLength(2);
  expect(decoded.find((d) => d.errorMessage)?.errorMessage).toContain('malformed ModelInferRequest: length 100 at byte 2 runs past the end');
  expect(decoded.find((d) => !d.errorMessage)?.inferResponse?.id).toBe('after');
});
