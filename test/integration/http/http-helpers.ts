/**
 * Helpers of the HTTP frontend suites: a real Triton served on loopback (ports 0: suites run
 * in parallel), plain node:http requests, raw-socket exchanges for hostile inputs, and the
 * binary tensor data extension's body layout. Nothing is mocked: every request goes through
 * the real listener, router, codec, native batcher and bound JS models.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { Triton } from '../../../ts/triton';
import type { TritonConfig } from '../../../ts/config/types';
import type { Request, ResponseOutputs } from '../../../ts/request';

export interface Served {
  triton: Triton;
  port: number;
  metricsPort: number;
}

/** Starts a Triton on loopback (free ports, no gRPC) after `bind` has bound its models. */
export async function serve(bind: (triton: Triton) => void, config: TritonConfig = {}): Promise<Served> {
  const triton = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, metricsPort: 0, allowGrpc: false, logInfo: false, logWarning: false, ...config,
    },
  });
  bind(triton);
  await triton.run();
  return { triton, port: triton.ports.http ?? 0, metricsPort: triton.ports.metrics ?? 0 };
}

/** The identity callable: every output named in `map` echoes its input. */
export function echo(map: Record<string, string>) {
  return (requests: Request[]): ResponseOutputs[] => requests.map((r) => {
    const out: ResponseOutputs = {};
    for (const [output, input] of Object.entries(map)) if (r.data[input]) out[output] = r.data[input];
    return out;
  });
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body as JSON. */
  json<T = Record<string, unknown>>(): T;
  /** `error` of a JSON error body. */
  error: string;
}

function reply(status: number, headers: http.IncomingHttpHeaders, body: Buffer): Reply {
  return {
    status, headers, body,
    json: <T>() => JSON.parse(body.toString('utf8')) as T,
    get error() {
      try {
        return (JSON.parse(body.toString('utf8')) as { error?: string }).error ?? '';
      } catch {
        return '';
      }
    },
  };
}

const agent = new http.Agent({ keepAlive: true });

/** One HTTP request over a keep-alive connection. */
export function request(
  port: number, method: string, path: string, body?: Buffer | string | object, headers: Record<string, string | number> = {},
): Promise<Reply> {
  const data = body === undefined ? undefined
    : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers: { ...headers, 'Content-Length': data?.length ?? 0 } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(reply(res.statusCode ?? 0, res.headers, Buffer.concat(chunks))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(data);
  });
}

export const get = (port: number, path: string, headers?: Record<string, string>): Promise<Reply> =>
  request(port, 'GET', path, undefined, headers);
export const post = (port: number, path: string, body?: Buffer | string | object, headers?: Record<string, string | number>): Promise<Reply> =>
  request(port, 'POST', path, body, headers);

/** Parses one HTTP response out of raw bytes; null until it is complete. */
function parseResponse(data: Buffer): Reply | null {
  return parseOne(data)?.reply ?? null;
}

/** One response and the bytes it took. */
function parseOne(data: Buffer): { reply: Reply; consumed: number } | null {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(lines[0].split(' ')[1]);
  const headers: http.IncomingHttpHeaders = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < end + 4 + length) return null;
  return { reply: reply(status, headers, data.subarray(end + 4, end + 4 + length)), consumed: end + 4 + length };
}

/**
 * Writes raw bytes to a fresh connection and resolves with the first complete response, or
 * null when the server closes the connection (or `timeoutMs` passes) without one.
 */
export function rawExchange(port: number, bytes: Buffer | string, timeoutMs = 5000): Promise<Reply | null> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const finish = (r: Reply | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish(parseResponse(data)), timeoutMs);
    socket.on('data', (chunk) => {
      data = Buffer.concat([data, chunk]);
      const r = parseResponse(data);
      if (r) finish(r);
    });
    socket.on('error', () => finish(parseResponse(data)));
    socket.on('close', () => finish(parseResponse(data)));
    socket.write(bytes);
  });
}

/** A raw POST with the given headers and body (Content-Length added unless given). */
export function rawPost(path: string, body: Buffer | string, headers: Record<string, string | number> = {}): Buffer {
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const all: Record<string, string | number> = { Host: 'localhost', ...headers };
  if (!Object.keys(all).some((k) => k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding')) {
    all['Content-Length'] = payload.length;
  }
  const head = Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${head}\r\n`), payload]);
}

/** A body of the binary tensor data extension: JSON header, then the raw tensors. */
export function binaryBody(header: object, ...tensors: (ArrayBufferView | Buffer)[]): { body: Buffer; headers: Record<string, string | number> } {
  const json = Buffer.from(JSON.stringify(header));
  const parts = tensors.map((t) => Buffer.from(t.buffer, t.byteOffset, t.byteLength));
  return {
    body: Buffer.concat([json, ...parts]),
    headers: { 'Inference-Header-Content-Length': json.length, 'Content-Type': 'application/octet-stream' },
  };
}

/** Splits a binary response into its JSON header and binary part. */
export function splitBinary(r: Reply): { header: Record<string, unknown> & { outputs: WireOutput[] }; binary: Buffer } {
  const length = Number(r.headers['inference-header-content-length']);
  return {
    header: JSON.parse(r.body.subarray(0, length).toString('utf8')) as Record<string, unknown> & { outputs: WireOutput[] },
    binary: r.body.subarray(length),
  };
}

export interface WireOutput {
  name: string;
  datatype: string;
  shape: number[];
  parameters?: Record<string, unknown>;
  data?: unknown[];
}

/** BYTES elements length-prefixed as the wire carries them. */
export function bytesTensor(items: (string | Buffer)[]): Buffer {
  return Buffer.concat(items.map((s) => {
    const b = Buffer.isBuffer(s) ? s : Buffer.from(s);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    return Buffer.concat([len, b]);
  }));
}

/** Closes the shared keep-alive agent's sockets (call in afterAll after stopping servers). */
export function closeAgent(): void {
  agent.destroy();
}

/**
 * One raw keep-alive connection: write requests (pipelined if written back to back) and read
 * their responses in order.
 */
export class RawConnection {
  readonly socket: net.Socket;
  #data = Buffer.alloc(0);
  #waiters: ((r: Reply | null) => void)[] = [];
  #closed = false;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (chunk) => {
      this.#data = Buffer.concat([this.#data, chunk]);
      this.#drain();
    });
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.#closed = true;
      for (const w of this.#waiters.splice(0)) w(null);
    });
  }

  connected(): Promise<void> {
    return new Promise((resolve) => (this.socket.connecting ? this.socket.once('connect', () => resolve()) : resolve()));
  }

  #drain(): void {
    while (this.#waiters.length > 0) {
      const r = parseOne(this.#data);
      if (!r) return;
      this.#data = this.#data.subarray(r.consumed);
      this.#waiters.shift()!(r.reply);
    }
  }

  write(bytes: Buffer | string): void {
    this.socket.write(bytes);
  }

  /** The next response; null when the connection closed first. */
  next(): Promise<Reply | null> {
    if (this.#closed) return Promise.resolve(parseResponse(this.#data));
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#drain();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** A raw GET. */
export function rawGet(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
}
