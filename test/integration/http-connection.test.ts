/**
 * The HTTP client's keep-alive sockets (ts/client/http-connection.ts) against real servers on
 * loopback, for what node:http's client used to do for it: request heads built and checked as
 * node:http checks them, interim (1xx) answers and trailers skipped, at most maxSockets sockets
 * with the calls beyond them served in turn, a deadline and an abort that drop the socket (the
 * server sees the close), an idle socket the server closes replaced without a failed call, and
 * every call in flight failing with ClientClosedError when the client closes. Framing and the
 * failures of a single exchange are in perf-raw-http.test.ts (perf uses the same pool).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { HttpConnectionPool, requestHead, type ServerAddress } from '../../ts/client/http-connection';
import { ClientClosedError, ClientTimeoutError } from '../../ts/client/errors';
import { HttpInferenceServerClient } from '../../ts/client/http';
import { InferenceServerError } from '../../ts/errors';
import { waitFor } from './helpers';

const servers: net.Server[] = [];
const pools: HttpConnectionPool[] = [];
const serverSockets = new Set<net.Socket>();

afterEach(async () => {
  for (const p of pools.splice(0)) p.close(new ClientClosedError());
  for (const socket of serverSockets) socket.destroy();
  serverSockets.clear();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen<T extends net.Server>(server: T): Promise<{ server: T; port: number }> {
  servers.push(server);
  server.on('connection', (socket: net.Socket) => serverSockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function pool(port: number, maxSockets = Infinity): HttpConnectionPool {
  const address: ServerAddress = {
    hostname: '127.0.0.1', port, origin: `http://127.0.0.1:${port}`,
    unreachable: (err) => new InferenceServerError('UNAVAILABLE', `cannot reach: ${err.code}`),
  };
  const p = new HttpConnectionPool(address, maxSockets);
  pools.push(p);
  return p;
}

const failure = (why: 'timeout' | 'abort'): Error =>
  (why === 'timeout' ? new ClientTimeoutError('too late') : new InferenceServerError('CANCELLED', 'aborted'));

function send(p: HttpConnectionPool, body: string, timeoutMs = 10_000, signal?: AbortSignal): Promise<string> {
  const head = requestHead('POST', 'x', '/echo', { 'Content-Type': 'text/plain' }, Buffer.byteLength(body));
  return p.send(head, Buffer.from(body), timeoutMs, signal, failure).then((a) => a.body.toString());
}

/** A node:http server answering each POST with `re:` and its body, after `delayMs`. */
function echoServer(delayMs = 0): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => setTimeout(() => res.end(`re:${Buffer.concat(chunks).toString()}`), delayMs));
  });
}

describe('requestHead', () => {
  test('Host first, the headers (names without case, the last given wins), Content-Length last', () => {
    const head = requestHead('POST', 'localhost:8000', '/v2/models/m/infer',
      { 'X-A': 1, 'x-a': 'two', host: 'other:1', 'content-length': 99, 'Transfer-Encoding': 'chunked' }, 5).toString();
    expect(head).toBe('POST /v2/models/m/infer HTTP/1.1\r\nhost: other:1\r\nx-a: two\r\nContent-Length: 5\r\n\r\n');
  });

  test('a line break or other forbidden character in a header, or a space in the path, is refused', () => {
    expect(() => requestHead('GET', 'h', '/p', { 'X-A': 'v\r\nX-Injected: 1' }, 0)).toThrow(/Invalid character in header content/);
    expect(() => requestHead('GET', 'h', '/p', { 'Bad Name': 'v' }, 0)).toThrow(/Header name must be a valid HTTP token/);
    expect(() => requestHead('GET', 'h', '/a b', {}, 0)).toThrow(/Request path contains unescaped characters/);
  });
});

test('at most maxSockets sockets: calls beyond them wait their turn and all get their own answers', async () => {
  const { server, port } = await listen(echoServer(5));
  let connections = 0;
  server.on('connection', () => connections++);
  const p = pool(port, 2);
  const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => send(p, `q${i}`)));
  expect(answers).toEqual(Array.from({ length: 9 }, (_, i) => `re:q${i}`));
  expect(connections).toBe(2);
});

test('a call waiting for a socket still has its deadline', async () => {
  const { port } = await listen(echoServer(300));
  const p = pool(port, 1);
  const first = send(p, 'slow');
  await expect(send(p, 'queued', 50)).rejects.toBeInstanceOf(ClientTimeoutError);
  expect(await first).toBe('re:slow');
  expect(await send(p, 'after')).toBe('re:after');  // the queue did not keep the timed-out call
});

test('an abort in flight fails the call CANCELLED and closes its socket, which the server sees', async () => {
  let closed!: () => void;
  const sawClose = new Promise<void>((resolve) => { closed = resolve; });
  const { port } = await listen(http.createServer((req) => req.socket.once('close', closed)));  // never answers
  const controller = new AbortController();
  const call = send(pool(port), 'x', 10_000, controller.signal);
  setTimeout(() => controller.abort(), 20);
  await expect(call).rejects.toMatchObject({ code: 'CANCELLED' });
  await sawClose;
});

test('interim 1xx answers are skipped and trailers after a chunked body are read past', async () => {
  const { port } = await listen(net.createServer((socket) => {
    socket.on('data', () => socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n' +
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n'));
  }));
  const p = pool(port);
  expect(await send(p, 'x')).toBe('abcde');
  expect(await send(p, 'y')).toBe('abcde');  // the trailer was consumed: the socket is in step
});

test('an idle socket the server closes is replaced: the next call does not fail', async () => {
  // Answers with keep-alive, then closes the socket 20 ms later, as a server's keep-alive timeout does.
  let connections = 0;
  let closed = 0;
  const { port } = await listen(net.createServer((socket) => {
    connections++;
    socket.once('close', () => closed++);
    socket.on('data', () => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      setTimeout(() => socket.end(), 20);
    });
  }));
  const p = pool(port);
  expect(await send(p, 'a')).toBe('ok');
  // The server's side closes only once the client's FIN is back, and the client sends it when it
  // handles the server's (its 'end'): the client has seen the close before the next call. A pool
  // that then reused the socket would write to one ended both ways, and the call would fail.
  await waitFor(() => closed === 1, 'the client to see the server close the idle socket');
  expect(await send(p, 'b')).toBe('ok');
  expect(connections).toBe(2);
});

test('the HTTP client: generateStream sockets count against maxSockets with the other calls', async () => {
  // Live calls answer at once; a stream sends one event once every other socket has closed
  // (or 2 s have passed: `alone` false), and holds until `endStream`.
  const sockets = new Set<net.Socket>();
  let alone = false;
  let endStream!: () => void;
  const { server, port } = await listen(http.createServer((req, res) => {
    req.resume();
    if (!req.url!.endsWith('/generate_stream')) return void res.end();
    const others = [...sockets].filter((s) => s !== req.socket);
    const closed = Promise.all(others.map((s) => new Promise((resolve) => s.once('close', resolve))));
    void Promise.race([closed.then(() => true), new Promise((resolve) => setTimeout(resolve, 2000, false))]).then((all) => {
      alone = all as boolean;
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: {"model_name":"m","model_version":"1","n":1}\n\n');
      endStream = () => res.end();
    });
  }));
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { maxSockets: 1 });
  expect(await client.isServerLive()).toBe(true);  // leaves an idle keep-alive socket
  const stream = client.generateStream('m', { text: 'x' });
  expect((await stream.next()).value).toMatchObject({ n: 1 });
  expect(alone).toBe(true);  // the idle socket was closed to make room for the stream's
  await expect(client.isServerLive({ timeoutMs: 100 })).rejects.toBeInstanceOf(ClientTimeoutError);
  const waiting = client.isServerLive();
  endStream();
  expect((await stream.next()).done).toBe(true);
  expect(await waiting).toBe(true);  // took the place the stream gave back
  await client.close();
});

test('the HTTP client: a generateStream node:http refuses at once (a bad header) gives its maxSockets place back', async () => {
  const { port } = await listen(echoServer());
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { maxSockets: 1 });
  for (let i = 0; i < 3; i++) {
    await expect(client.generateStream('m', { text: 'x' }, { headers: { 'x-bad': 'a\nb' } }).next()).rejects.toThrow(/Invalid character/);
  }
  expect(await client.isServerLive({ timeoutMs: 2000 })).toBe(true);
  await client.close();
});

test('closing fails the calls in flight and those waiting with the error given', async () => {
  const { port } = await listen(echoServer(10_000));
  const p = pool(port, 1);
  const calls = [send(p, 'in flight'), send(p, 'waiting')];
  await new Promise((resolve) => setTimeout(resolve, 20));
  p.close(new ClientClosedError());
  for (const call of calls) await expect(call).rejects.toBeInstanceOf(ClientClosedError);
});

test('the HTTP client: compressed answers, its headers on the wire, and a closed client failing its calls', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const { port } = await listen(http.createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Type', 'application/json');
    res.end(gzipSync(Buffer.from('{"live":true}')));
  }));
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`, { headers: { 'X-Default': 'd' } });
  expect(await client.isServerLive({ headers: { 'X-Call': 'c' } })).toBe(true);
  expect(seen[0]).toMatchObject({ host: `127.0.0.1:${port}`, 'x-default': 'd', 'x-call': 'c', 'content-length': '0' });
  await client.close();
  await expect(client.isServerLive()).rejects.toBeInstanceOf(ClientClosedError);
});

test('the HTTP client: the deadline and an abort cover inflating the answer, not only receiving it', async () => {
  // 256 MiB of zeros gzipped to ~256 KiB: it arrives at once, and inflating it takes far longer than 100 ms.
  const bomb = gzipSync(Buffer.alloc(256 * 1024 * 1024), { level: 9 });
  const { port } = await listen(http.createServer((req, res) => {
    req.resume();
    res.setHeader('Content-Encoding', 'gzip');
    res.end(bomb);
  }));
  const client = new HttpInferenceServerClient(`127.0.0.1:${port}`);
  await expect(client.isServerLive({ timeoutMs: 100 })).rejects.toBeInstanceOf(ClientTimeoutError);
  const controller = new AbortController();
  const call = client.isServerLive({ signal: controller.signal });
  setTimeout(() => controller.abort(), 100);
  await expect(call).rejects.toMatchObject({ code: 'CANCELLED' });
  await client.close();
});

test('large answers arriving in many reads, by Content-Length and chunked, come back byte for byte', async () => {
  const size = 8 * 1024 * 1024 + 13;
  const payload = Buffer.alloc(size);
  for (let i = 0; i < size; i++) payload[i] = (i * 31 + (i >> 11)) & 0xff;
  const { port } = await listen(http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const chunked = req.url === '/chunked';
      if (!chunked) res.setHeader('Content-Length', size);
      // Written in pieces of 1000-odd bytes: the client reads them in many small reads.
      let at = 0;
      const more = (): void => {
        while (at < size) {
          const next = Math.min(size, at + 1000 + (at % 7));
          const ok = res.write(payload.subarray(at, next));
          at = next;
          if (!ok) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
  }));
  const p = pool(port);
  for (const path of ['/length', '/chunked', '/length']) {
    const answer = await p.send(requestHead('GET', 'x', path, {}, 0), undefined, 60_000, undefined, failure);
    expect(answer.body.length).toBe(size);
    expect(answer.body.equals(payload)).toBe(true);
  }
});

test('an answer head that never ends is refused rather than buffered without bound', async () => {
  const { port } = await listen(net.createServer((socket) => {
    socket.once('data', () => socket.write(`HTTP/1.1 200 OK\r\nX-Long: ${'a'.repeat(100 * 1024)}`));
  }));
  await expect(send(pool(port), 'x')).rejects.toMatchObject({
    code: 'UNAVAILABLE', message: expect.stringContaining('could not be read: an answer head longer than 65536 bytes'),
  });
});

test('a program that never closes its client still exits: idle sockets do not hold the event loop', async () => {
  const { server, port } = await listen(echoServer());
  server.keepAliveTimeout = 0;  // the server never closes the idle socket itself
  const lib = path.join(__dirname, '..', '..', 'lib', 'index.js');
  const script = `const { HttpInferenceServerClient } = require(${JSON.stringify(lib)});
    new HttpInferenceServerClient('127.0.0.1:${port}').isServerLive().then((live) => console.log('live', live));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  const killer = setTimeout(() => child.kill(), 20_000);  // a process held open fails here, not by jest's timeout
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(killer);
  expect(out.trim()).toBe('live true');  // the echo server answers every path with 200
  expect(code).toBe(0);
});

describe('sockets that must not be reused', () => {
  /** A raw server answering each request with `answers(n)` for the n-th request on a socket; counts sockets. */
  async function rawServer(answer: (n: number) => string): Promise<{ port: number; sockets: () => number }> {
    let sockets = 0;
    const { port } = await listen(net.createServer((socket) => {
      sockets++;
      let n = 0;
      socket.on('data', () => socket.write(answer(n++)));
    }));
    return { port, sockets: () => sockets };
  }

  test('bytes after an answer: the socket is dropped, so they never answer the next request', async () => {
    const { port, sockets } = await rawServer((n) => `HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nA${n}` +
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE');
    const p = pool(port);
    expect(await send(p, 'x')).toBe('A0');
    expect(await send(p, 'y')).toBe('A0');  // a new socket's first answer, not "STALE"
    expect(sockets()).toBe(2);
  });

  test('bytes on an idle socket drop it', async () => {
    let connections = 0;
    let closed = 0;
    const { port } = await listen(net.createServer((socket) => {
      connections++;
      socket.once('close', () => closed++);
      socket.on('data', () => {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
        // The server never closes this socket itself: only the client dropping it closes it.
        setTimeout(() => socket.write('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n'), 20);
      });
    }));
    const p = pool(port);
    expect(await send(p, 'x')).toBe('ok');
    // The client drops the socket when the stray bytes come; a pool that kept it fails here.
    await waitFor(() => closed === 1, 'the client to drop the socket the stray bytes came on');
    expect(await send(p, 'y')).toBe('ok');
    expect(connections).toBe(2);
  });

  test('HTTP/1.0 without keep-alive, and Connection: close, free their place at once (maxSockets 1)', async () => {
    for (const head of ['HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok', 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok']) {
      // The server never closes its side: the next call must not wait for it.
      const { port, sockets } = await rawServer(() => head);
      const p = pool(port, 1);
      expect(await send(p, 'a', 5000)).toBe('ok');
      expect(await send(p, 'b', 5000)).toBe('ok');
      expect(sockets()).toBe(2);
    }
  });

  test('a 304 or 204 with a Content-Length has no body, and the socket stays in step', async () => {
    const { port, sockets } = await rawServer((n) => (n % 2 === 0
      ? 'HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n' : 'HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n'));
    const p = pool(port);
    for (const status of [304, 204, 304]) {
      const answer = await p.send(requestHead('GET', 'x', '/', {}, 0), undefined, 5000, undefined, failure);
      expect([answer.status, answer.body.length]).toEqual([status, 0]);
    }
    expect(sockets()).toBe(1);
  });
});

test('maxSockets 0 (or negative) means no limit, as with node:http', async () => {
  const { port } = await listen(echoServer(5));
  for (const max of [0, -1, Number.NaN]) {
    const p = pool(port, max);
    expect(await Promise.all([send(p, 'a', 5000), send(p, 'b', 5000)])).toEqual(['re:a', 're:b']);
  }
});

test('TLS options node:tls refuses at once fail the call at once (not at its deadline), UNAVAILABLE', async () => {
  const { port } = await listen(echoServer());
  const address: ServerAddress = {
    hostname: '127.0.0.1', port, origin: `https://127.0.0.1:${port}`,
    tls: { cert: 'not a certificate', key: 'not a key' },
    unreachable: (err) => new InferenceServerError('UNAVAILABLE', `cannot reach: ${err.message}`),
  };
  const p = new HttpConnectionPool(address);
  pools.push(p);
  // A 60 s deadline: waiting for it would outlast jest's 30 s limit.
  await expect(p.send(requestHead('GET', 'x', '/', {}, 0), undefined, 60_000, undefined, failure)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
});
