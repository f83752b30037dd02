/**
 * HttpInferenceServerClient against a server whose answers are malformed (a proxy's page, a
 * body that is not an inference response, a binary_data_size of the wrong type): every failure
 * must be an InferenceServerError (http.ts's promise), never a bare SyntaxError or TypeError.
 */
import * as net from 'node:net';
import { InferenceServerError } from '../../ts/errors';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { InferInput } from '../../ts/client/infer-io';

/** A raw TCP server answering each request with `answer` (then closing the socket when `closeAfter`). */
async function withServer(answer: Buffer, run: (client: HttpInferenceServerClient) => Promise<void>, closeAfter = false): Promise<void> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let buf = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/content-length: *(\d+)/i.exec(buf.toString('latin1', 0, end))?.[1] ?? 0);
      if (buf.length < end + 4 + length) return;
      buf = Buffer.alloc(0);
      if (closeAfter) socket.end(answer);
      else socket.write(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new HttpInferenceServerClient(`127.0.0.1:${(server.address() as net.AddressInfo).port}`, { timeoutMs: 5000 });
  try {
    await run(client);
  } finally {
    await client.close();
    for (const s of sockets) s.destroy();
    server.close();
  }
}

function answer200(body: string | Buffer, headers: Record<string, string | number> = {}): Buffer {
  let head = 'HTTP/1.1 200 OK\r\n';
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  const bytes = Buffer.from(body);
  return Buffer.concat([Buffer.from(`${head}Content-Length: ${bytes.length}\r\n\r\n`), bytes]);
}

async function failure(promise: Promise<unknown>): Promise<InferenceServerError> {
  const err = await promise.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(InferenceServerError);
  return err as InferenceServerError;
}

const inputs = (): InferInput[] => [new InferInput('IN', [1], 'FP32').setData(new Float32Array([1]))];

test('a 200 answer to infer that is not JSON is an INTERNAL InferenceServerError, not a SyntaxError', async () => {
  await withServer(answer200('<html>proxy</html>'), async (client) => {
    const err = await failure(client.infer('m', inputs()));
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toMatch(/^the server's inference response is not JSON: /);
  });
});

test('a 200 answer to infer whose outputs are not a list is an INTERNAL InferenceServerError, not a TypeError', async () => {
  for (const body of ['{"model_name":"m","model_version":"1","outputs":{}}', '[1]', 'null', '{"outputs":[null]}']) {
    await withServer(answer200(body), async (client) => {
      const err = await failure(client.infer('m', inputs()));
      expect(err.code).toBe('INTERNAL');
      expect(err.message).toMatch(/is not an inference response/);
    });
  }
});

test('a binary_data_size that is not a number is refused as such (not "runs past the answer")', async () => {
  const header = JSON.stringify({ model_name: 'm', model_version: '1', outputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters: { binary_data_size: '4' } }] });
  const body = Buffer.concat([Buffer.from(header), Buffer.from(new Float32Array([1]).buffer)]);
  await withServer(answer200(body, { 'Inference-Header-Content-Length': header.length }), async (client) => {
    const err = await failure(client.infer('m', inputs()));
    expect(err.code).toBe('INVALID_ARG');
    expect(err.message).toBe(`output 'A': binary_data_size "4" is not a non-negative integer`);
  });
});

test('a binary_data_size that disagrees with the shape is an error, not a wrong tensor', async () => {
  const header = JSON.stringify({ model_name: 'm', model_version: '1', outputs: [
    { name: 'A', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 8 } },
    { name: 'B', datatype: 'FP32', shape: [0], parameters: { binary_data_size: 0 } }] });
  const body = Buffer.concat([Buffer.from(header), Buffer.from(new Float32Array([1, 2]).buffer)]);
  await withServer(answer200(body, { 'Inference-Header-Content-Length': header.length }), async (client) => {
    const err = await failure(client.infer('m', inputs()));
    expect(err.message).toBe("unexpected byte size for output 'A': FP32 tensor of shape [1] needs 4 bytes, got 8");
  });
});

test('a metadata answer that is not JSON is an INTERNAL InferenceServerError', async () => {
  await withServer(answer200('not json'), async (client) => {
    const err = await failure(client.serverMetadata());
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toMatch(/^the server's answer to GET \/v2 is not JSON: /);
  });
});

test('an answer cut mid-body by the server closing is UNAVAILABLE, at once', async () => {
  const cut = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"model_name":');
  await withServer(cut, async (client) => {
    const started = Date.now();
    const err = await failure(client.infer('m', inputs()));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toMatch(/closed before the whole answer arrived/);
    expect(Date.now() - started).toBeLessThan(2000);
  }, true);
});
