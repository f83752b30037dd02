/**
 * Connections and request lifecycles: a client that disconnects cancels its queued request
 * (never executed, counted as CANCELED, nothing left pending), a client gone mid-execution or
 * mid-body leaks nothing, slow clients do not hold others up, keep-alive and pipelining work,
 * concurrent requests are batched, and a stopping server answers 503 while draining.
 */
import { Recorder, track, waitFor } from '../helpers';
import type { Triton } from '../../../ts/triton';
import {
  closeAgent, post, RawConnection, rawExchange, rawGet, rawPost, serve, type Served,
} from './http-helpers';

let s: Served;
let recorder: Recorder;
let batcher: Recorder;

function bindHeld(t: Triton): void {
  recorder = new Recorder();
  t.bind({
    modelName: 'held', inferFunc: recorder.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    // One request per execution: a second request stays queued while the first one is held.
    config: { maxBatchSize: 1 },
  });
  batcher = new Recorder();
  t.bind({
    modelName: 'batched', inferFunc: batcher.func,
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [1] }],
    config: { maxBatchSize: 64 },
  });
}

const tagged = (tag: number): string => JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [tag] }] });
const HELD = '/v2/models/held/infer';

beforeEach(async () => {
  s = await serve(bindHeld);
});

afterEach(async () => {
  await s.triton.stop();
});

afterAll(() => closeAgent());

describe('client disconnects', () => {
  test('a queued request whose client disconnects is cancelled, never executed', async () => {
    const model = s.triton.model('held');
    const gate = recorder.hold();
    const first = post(s.port, HELD, tagged(1));
    await waitFor(() => recorder.active === 1, 'the first request to execute');
    const conn = new RawConnection(s.port);
    conn.write(rawPost(HELD, tagged(2)));
    await waitFor(() => model.stats().queued === 1, 'the second request to be queued');
    conn.destroy();
    await waitFor(() => model.stats().failures.CANCELED === 1, 'the cancellation to be counted');
    expect(model.stats().queued).toBe(0);
    gate.open();
    expect((await first).status).toBe(200);
    await waitFor(() => model.pendingCount === 0, 'nothing pending');
    expect(recorder.tagOrder).toEqual([1]);
    expect(model.stats().success.count).toBe(1);
    expect((await post(s.port, HELD, tagged(3))).status).toBe(200);
    expect(recorder.tagOrder).toEqual([1, 3]);
  });

  test('a client gone while its request executes: the result is dropped, nothing leaks', async () => {
    const model = s.triton.model('held');
    const gate = recorder.hold();
    const conn = new RawConnection(s.port);
    conn.write(rawPost(HELD, tagged(1)));
    await waitFor(() => recorder.active === 1, 'the request to execute');
    conn.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    gate.open();
    await waitFor(() => model.pendingCount === 0 && recorder.active === 0, 'the execution to end');
    expect((await post(s.port, HELD, tagged(2))).status).toBe(200);
  });

  test('a client gone in the middle of its body never reaches the model', async () => {
    const conn = new RawConnection(s.port);
    const head = `POST ${HELD} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n`;
    conn.write(head + tagged(1).slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 50));
    conn.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(recorder.calls.length).toBe(0);
    expect(s.triton.model('held').stats().success.count + s.triton.model('held').stats().fail.count).toBe(0);
    expect((await post(s.port, HELD, tagged(2))).status).toBe(200);
  });
});

describe('connections', () => {
  test('a slow client does not hold up the others, and is answered when it is done', async () => {
    const slow = new RawConnection(s.port);
    const request = rawPost('/v2/models/batched/infer', tagged(7));
    const headLength = request.indexOf('\r\n\r\n') + 4;
    // About 4 bytes every 10 ms, all but the last byte: that one is written only once the
    // others have their answers, so the slow request is still incomplete however long they take.
    const held = request.length - 1;
    let sent = 0;
    const trickle = setInterval(() => {
      const next = Math.min(sent + 4, held);
      slow.write(request.subarray(sent, next));
      sent = next;
      if (sent === held) clearInterval(trickle);
    }, 10);
    let received = 0;
    slow.socket.on('data', (chunk: Buffer) => { received += chunk.length; });
    const answer = track(slow.next());
    try {
      // The others start once the slow request's head is out: the server has begun it, and a
      // server that took requests one at a time would hold them up behind its body.
      await waitFor(() => sent >= headLength, 'the slow request\'s head to be sent');
      const statuses: number[] = [];
      const others = track((async () => {
        for (let i = 0; i < 5; i++) statuses.push((await post(s.port, '/v2/models/batched/infer', tagged(i))).status);
      })());
      // A deadline rather than a wait without end: others stuck behind the slow request fail here.
      await waitFor(() => others.settled, 'the others to be answered while the slow request is incomplete', 15_000);
      await others.promise;
      expect(statuses).toEqual([200, 200, 200, 200, 200]);
      // The others finished while the slow one was still sending: it has had no answer, not a byte.
      expect(answer.settled).toBe(false);
      expect(received).toBe(0);
    } catch (err) {
      slow.destroy();
      throw err;
    } finally {
      clearInterval(trickle);
    }
    slow.write(request.subarray(sent));
    const reply = await answer.promise;
    expect(reply!.status).toBe(200);
    expect(reply!.json().outputs).toEqual([{ name: 'OUT', datatype: 'FP32', shape: [1, 1], data: [7] }]);
    slow.destroy();
  });

  test('keep-alive: several requests on one connection, pipelined too', async () => {
    const conn = new RawConnection(s.port);
    conn.write(rawPost('/v2/models/batched/infer', tagged(1)) + '');
    expect((await conn.next())!.status).toBe(200);
    conn.write(Buffer.concat([rawPost('/v2/models/batched/infer', tagged(2)), Buffer.from(rawGet('/v2/health/live'))]));
    const second = await conn.next();
    expect(second!.json().outputs).toEqual([{ name: 'OUT', datatype: 'FP32', shape: [1, 1], data: [2] }]);
    expect((await conn.next())!.status).toBe(200);
    conn.destroy();
  });

  test('requests that queue while the instance is busy are batched together', async () => {
    const gate = batcher.hold();
    const first = post(s.port, '/v2/models/batched/infer', tagged(0));
    await waitFor(() => batcher.active === 1, 'the first request to execute');
    const rest = Array.from({ length: 39 }, (_, i) => post(s.port, '/v2/models/batched/infer', tagged(i + 1)));
    await waitFor(() => s.triton.model('batched').stats().queued === 39, 'the others to queue');
    gate.open();
    const replies = [await first, ...(await Promise.all(rest))];
    replies.forEach((r, i) => expect(r.json().outputs).toEqual([expect.objectContaining({ data: [i] })]));
    expect(batcher.batchSizes).toEqual([1, 39]);
  });
});

describe('graceful shutdown', () => {
  test('while draining: in-flight requests finish, new inferences and readiness get 503', async () => {
    const gate = recorder.hold();
    const conn = new RawConnection(s.port);
    conn.write(rawPost(HELD, tagged(1)));
    await waitFor(() => recorder.active === 1, 'the request to execute');
    const stopped = s.triton.stop();
    // Pipelined behind the in-flight request on its keep-alive connection.
    conn.write(rawGet('/v2/health/ready') + rawGet('/v2/health/live'));
    conn.write(rawPost(HELD, tagged(2)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    gate.open();
    const inflight = await conn.next();
    expect(inflight!.status).toBe(200);
    const ready = await conn.next();
    expect(ready!.status).toBe(503);
    expect(ready!.error).toBe('Server exiting');
    expect((await conn.next())!.status).toBe(503);
    const refused = await conn.next();
    expect(refused!.status).toBe(503);
    expect(refused!.error).toBe('HTTP server is shutting down and has stopped accepting new requests.');
    await stopped;
    expect(recorder.tagOrder).toEqual([1]);
    expect(await rawExchange(s.port, rawGet('/v2/health/live'), 500)).toBeNull();
    conn.destroy();
  });
});
