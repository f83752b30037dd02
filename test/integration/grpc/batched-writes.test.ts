/**
 * batchWrites (ts/server/grpc/batched-writes.ts) on a real grpc-js server stream: with the
 * grpc-js version the project pins it does install `_writev` (a grpc-js upgrade that moves its
 * `call` member would silently turn it off: this test says so), and messages written faster than
 * HTTP/2 completes them all arrive, in order, with the stream's end and status intact.
 */
import * as grpc from '@grpc/grpc-js';
import { batchWrites } from '../../../ts/server/grpc/batched-writes';

const identity = (value: Buffer): Buffer => value;
const service: grpc.ServiceDefinition = {
  Echo: {
    path: '/test.Batched/Echo', requestStream: true, responseStream: true,
    requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
  },
};

test('a burst of writes arrives whole and in order once batchWrites is installed', async () => {
  let installed = false;
  const server = new grpc.Server();
  server.addService(service, {
    Echo: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      batchWrites(call);
      installed = typeof (call as unknown as { _writev?: unknown })._writev === 'function';
      call.on('data', (request: Buffer) => {
        const count = request.readUInt32LE(0);
        for (let i = 0; i < count; i++) {
          const message = Buffer.alloc(4);
          message.writeUInt32LE(i);
          call.write(message);
        }
        call.end();
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  const Client = grpc.makeGenericClientConstructor(service, 'Batched');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    Echo: () => grpc.ClientDuplexStream<Buffer, Buffer>;
  };
  try {
    const stream = client.Echo();
    const received: number[] = [];
    const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    stream.on('data', (m: Buffer) => received.push(m.readUInt32LE(0)));
    const request = Buffer.alloc(4);
    request.writeUInt32LE(2000);
    stream.write(request);
    stream.end();
    const status = await ended;
    expect(status.code).toBe(grpc.status.OK);
    expect(installed).toBe(true);
    expect(received).toEqual(Array.from({ length: 2000 }, (_, i) => i));
  } finally {
    client.close();
    server.forceShutdown();
  }
});
