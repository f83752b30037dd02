/**
 * TLS end to end, with certificates the suite makes with the openssl CLI: a CA, a server
 * certificate for 127.0.0.1 and localhost (subjectAltName), a client certificate, and a client
 * certificate of another CA. Real servers on loopback (ports 0) serve HTTPS and gRPC over TLS,
 * with and without required client certificates; infernode's own clients (HTTP, gRPC,
 * ModelClient) connect with and without the right certificates. Bad certificate files fail
 * start-up naming the setting (and flag) and the path, in process and through `infernode serve`.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Triton } from '../../ts/triton';
import type { TritonConfig } from '../../ts/config/types';
import { NDArray } from '../../ts/tensor';
import { HttpInferenceServerClient, type HttpClientOptions } from '../../ts/client/http';
import { GrpcInferenceServerClient, type GrpcClientOptions } from '../../ts/client/grpc';
import { ModelClient } from '../../ts/client/model-client';
import { ClientValueError } from '../../ts/client/errors';
import { InferenceServerError } from '../../ts/errors';
import { expectRejects } from './helpers';
import { echo } from './http/http-helpers';
import { ensureLib, LIB } from './lib-build';

/** The suite's certificates (made in beforeAll), repositories and a non-PEM file. */
const dir = mkdtempSync(path.join(os.tmpdir(), 'infernode-tls-'));
const file = (name: string): string => path.join(dir, name);

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A key and a certificate signed by `ca`, with the given extensions. */
function issue(name: string, ca: string, subject: string, extensions: string): void {
  writeFileSync(file(`${name}.ext`), extensions);
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial',
    '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`);
}

function makeCa(name: string): void {
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=infernode test ${name}`);
}

beforeAll(() => {
  makeCa('ca');
  makeCa('other-ca');
  issue('server', 'ca', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', 'ca', '/CN=infernode test client', 'extendedKeyUsage=clientAuth\n');
  issue('stranger', 'other-ca', '/CN=infernode test stranger', 'extendedKeyUsage=clientAuth\n');
  writeFileSync(file('not-pem.crt'), 'this is not a certificate\n');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const servers: Triton[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((t) => t.stop()));
});

function grpcTls(mutual: boolean): TritonConfig {
  return {
    [mutual ? 'grpcUseSslMutual' : 'grpcUseSsl']: true,
    grpcServerCert: file('server.crt'), grpcServerKey: file('server.key'), grpcRootCert: mutual ? file('ca.crt') : undefined,
  };
}

function httpTls(mutual: boolean): TritonConfig {
  return {
    [mutual ? 'httpUseSslMutual' : 'httpUseSsl']: true,
    httpServerCert: file('server.crt'), httpServerKey: file('server.key'), httpRootCert: mutual ? file('ca.crt') : undefined,
  };
}

/** A Triton on loopback serving `add_one` over HTTP and gRPC (ports 0), with `config`. */
function triton(config: TritonConfig): Triton {
  const t = new Triton({
    config: {
      httpAddress: '127.0.0.1', httpPort: 0, grpcAddress: '127.0.0.1', grpcPort: 0, allowMetrics: false,
      logInfo: false, logWarning: false, ...config,
    },
  });
  t.bind({
    modelName: 'echo', inferFunc: echo({ OUT: 'IN' }),
    inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 4 },
  });
  servers.push(t);
  return t;
}

async function started(config: TritonConfig): Promise<{ http: number; grpc: number }> {
  const t = triton(config);
  await t.run();
  return { http: t.ports.http ?? 0, grpc: t.ports.grpc ?? 0 };
}

const input = (): NDArray => new NDArray('FP32', [1, 3], new Float32Array([1, 2, 3]));

/** One inference through `client`; resolves with OUT's values. */
async function inferThrough(client: HttpInferenceServerClient | GrpcInferenceServerClient): Promise<number[]> {
  try {
    const { outputs } = await client.infer({ modelName: 'echo', inputs: { IN: input() }, timeoutMs: 20_000 });
    return [...outputs.OUT.data as Float32Array];
  } finally {
    await client.close();
  }
}

const https = (port: number, options: HttpClientOptions = {}): HttpInferenceServerClient =>
  new HttpInferenceServerClient(`https://localhost:${port}`, { timeoutMs: 20_000, ...options });
const grpcs = (port: number, options: GrpcClientOptions = {}): GrpcInferenceServerClient =>
  new GrpcInferenceServerClient(`localhost:${port}`, { timeoutMs: 20_000, ssl: true, ...options });
const clientCert = { certFile: file('client.crt'), keyFile: file('client.key') };

describe('HTTPS (httpUseSsl)', () => {
  test('the HTTP client given the CA infers; by name or by 127.0.0.1, file paths or PEM bytes', async () => {
    const { http } = await started(httpTls(false));
    expect(await inferThrough(https(http, { sslOptions: { caCerts: file('ca.crt') } }))).toEqual([1, 2, 3]);
    const byAddress = new HttpInferenceServerClient(`127.0.0.1:${http}`, {
      ssl: true, sslOptions: { caCerts: readFileSync(file('ca.crt')) },
    });
    expect(await inferThrough(byAddress)).toEqual([1, 2, 3]);
  });

  test('a client without the CA is refused: the server certificate is not trusted', async () => {
    const { http } = await started(httpTls(false));
    const client = https(http);
    await expectRejects(client.serverLive(), 'UNAVAILABLE', /TLS with the server at https:\/\/localhost:\d+ failed \(\w+.*sslOptions\.caCerts/);
    await client.close();
  });

  test('a plain HTTP client gets no answer from the HTTPS port', async () => {
    const { http } = await started(httpTls(false));
    const client = new HttpInferenceServerClient(`127.0.0.1:${http}`, { timeoutMs: 20_000 });
    await expectRejects(client.serverLive(), 'UNAVAILABLE',
      `the server at http://127.0.0.1:${http} closed the connection without answering (an https:// server does this to a plain http:// client)`);
    await client.close();
  });

  test('mutual TLS: without a client certificate, or with one of another CA, refused; with one, served', async () => {
    const { http } = await started(httpTls(true));
    const bare = https(http, { sslOptions: { caCerts: file('ca.crt') } });
    await expect(bare.serverLive()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await bare.close();
    const stranger = https(http, { sslOptions: { caCerts: file('ca.crt'), certFile: file('stranger.crt'), keyFile: file('stranger.key') } });
    await expect(stranger.serverLive()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await stranger.close();
    expect(await inferThrough(https(http, { sslOptions: { caCerts: file('ca.crt'), ...clientCert } }))).toEqual([1, 2, 3]);
  });
});

describe('gRPC over TLS (grpcUseSsl)', () => {
  test('the gRPC client with ssl and the CA infers; a plaintext client is refused', async () => {
    const { grpc } = await started(grpcTls(false));
    expect(await inferThrough(grpcs(grpc, { rootCertificates: file('ca.crt') }))).toEqual([1, 2, 3]);
    const plaintext = new GrpcInferenceServerClient(`127.0.0.1:${grpc}`, { timeoutMs: 20_000 });
    await expectRejects(plaintext.serverLive(), 'UNAVAILABLE');
    await plaintext.close();
  });

  test('a client without the CA is refused: the server certificate is not trusted', async () => {
    const { grpc } = await started(grpcTls(false));
    const untrusting = grpcs(grpc);
    await expectRejects(untrusting.serverLive(), 'UNAVAILABLE');
    await untrusting.close();
  });

  test('mutual TLS: without a client certificate, or with one of another CA, refused; with one, served', async () => {
    const { grpc } = await started(grpcTls(true));
    const bare = grpcs(grpc, { rootCertificates: file('ca.crt') });
    await expectRejects(bare.serverLive(), 'UNAVAILABLE');
    await bare.close();
    const stranger = grpcs(grpc, { rootCertificates: file('ca.crt'), certificateChain: file('stranger.crt'), privateKey: file('stranger.key') });
    await expectRejects(stranger.serverLive(), 'UNAVAILABLE');
    await stranger.close();
    const trusted = grpcs(grpc, { rootCertificates: file('ca.crt'), certificateChain: file('client.crt'), privateKey: file('client.key') });
    expect(await inferThrough(trusted)).toEqual([1, 2, 3]);
  });

  test('grpcUseSslMutual with grpcUseSsl also set requires client certificates (mutual preempts, as in Triton)', async () => {
    const { grpc } = await started({ ...grpcTls(true), grpcUseSsl: true });
    const bare = grpcs(grpc, { rootCertificates: file('ca.crt') });
    await expectRejects(bare.serverLive(), 'UNAVAILABLE');
    await bare.close();
  });
});

describe('ModelClient over TLS', () => {
  test('http and grpc URLs with ssl, the CA and a client certificate against mutual TLS; without the certificate, refused', async () => {
    const { http, grpc } = await started({ ...httpTls(true), ...grpcTls(true) });
    const ca = { ssl: true, rootCertificates: file('ca.crt') };
    const certificate = { certificateChain: file('client.crt'), privateKey: file('client.key') };
    for (const url of [`http://localhost:${http}`, `grpc://localhost:${grpc}`]) {
      const client = new ModelClient(url, 'echo', undefined, { ...ca, ...certificate, initTimeoutS: 20 });
      try {
        const out = await client.inferBatch({ IN: input() });
        expect([...out.OUT.data as Float32Array]).toEqual([1, 2, 3]);
      } finally {
        await client.close();
      }
      // Initialization retries until initTimeoutS, then fails with the last reason.
      const refused = new ModelClient(url, 'echo', undefined, { ...ca, initTimeoutS: 1 });
      try {
        await expectRejects(refused.inferBatch({ IN: input() }), 'UNAVAILABLE');
      } finally {
        await refused.close();
      }
    }
  });

  test('certificates without ssl are refused where the client is made', () => {
    expect(() => new ModelClient('http://localhost:1', 'echo', undefined, { rootCertificates: file('ca.crt') }))
      .toThrow(ClientValueError);
    expect(() => new GrpcInferenceServerClient('localhost:1', { rootCertificates: file('ca.crt') }))
      .toThrow('rootCertificates given without ssl: set ssl: true');
    expect(() => new HttpInferenceServerClient('http://localhost:1', { sslOptions: { caCerts: file('ca.crt') } }))
      .toThrow('which is plain HTTP: use an https:// URL');
    expect(() => grpcs(1, { rootCertificates: file('missing.crt') })).toThrow(`rootCertificates '${file('missing.crt')}' cannot be read`);
    expect(() => https(1, { sslOptions: { caCerts: file('not-pem.crt') } })).toThrow('is not PEM');
  });
});

/** The error run() fails with for `config`. */
async function startFailure(config: TritonConfig): Promise<InferenceServerError> {
  const t = triton(config);
  let error: unknown;
  try {
    await t.run();
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(InferenceServerError);
  expect((error as InferenceServerError).code).toBe('INVALID_ARG');
  return error as InferenceServerError;
}

describe('bad certificate files fail start-up, naming the setting, its flag and the path', () => {
  test.each([
    ['a missing server certificate', { ...grpcTls(false), grpcServerCert: 'MISSING' },
      "grpcServerCert (--grpc-server-cert) 'MISSING' cannot be read: the file does not exist"],
    ['a server certificate that is not PEM', { ...httpTls(false), httpServerCert: 'not-pem.crt' },
      "httpServerCert (--http-server-cert) 'not-pem.crt' is not a PEM file holding a certificate: it has no '-----BEGIN CERTIFICATE-----' line"],
    ['a certificate given as the key', { ...grpcTls(false), grpcServerKey: 'server.crt' },
      "grpcServerKey (--grpc-server-key) 'server.crt' is not a PEM file holding a private key"],
    ['a key that is not the certificate\'s', { ...httpTls(false), httpServerKey: 'client.key' },
      /^HTTP TLS: the certificate '.*server\.crt' \(httpServerCert \(--http-server-cert\)\), key '.*client\.key' .* cannot be used together: .*key values mismatch/],
    ['a directory as the root certificate', { ...grpcTls(true), grpcRootCert: '.' },
      /^grpcRootCert \(--grpc-root-cert\) '.*' cannot be read: EISDIR/],
    ['mutual TLS without a root certificate', { ...grpcTls(true), grpcRootCert: undefined },
      'grpcRootCert (--grpc-root-cert) is required when grpcUseSslMutual (--grpc-use-ssl-mutual) is true: give the PEM file holding the CA certificate that signs client certificates'],
    ['TLS without a key', { ...httpTls(false), httpServerKey: undefined },
      "httpServerKey (--http-server-key) is required when httpUseSsl (--http-use-ssl) is true: give the PEM file holding the server's private key"],
  ] as [string, TritonConfig, string | RegExp][])('%s', async (_what, config, message) => {
    // Relative names are the test directory's files (absolute paths keep their own).
    const inDir = Object.fromEntries(Object.entries(config).map(([k, v]) =>
      [k, typeof v === 'string' && !path.isAbsolute(v) && v !== 'MISSING' ? file(v) : v]));
    const error = await startFailure(inDir as TritonConfig);
    if (typeof message === 'string') expect(error.message.replace(dir + path.sep, '')).toContain(message);
    else expect(error.message).toMatch(message);
  });
});

describe('infernode serve', () => {
  const MAIN = (): string => path.join(LIB, 'cli', 'main.js');

  beforeAll(() => {
    ensureLib();
  }, 120_000);

  function repository(): string {
    const repo = path.join(dir, `repo-${Math.random().toString(36).slice(2)}`);
    mkdirSync(path.join(repo, 'echo', '1'), { recursive: true });
    writeFileSync(path.join(repo, 'echo', '1', 'model.js'), 'exports.execute = (rs) => rs.map((r) => ({ OUT: r.data.IN }));');
    writeFileSync(path.join(repo, 'echo', 'config.pbtxt'), 'backend: "js"\nmax_batch_size: 4\n' +
      'input [ { name: "IN", data_type: TYPE_FP32, dims: [ -1 ] } ]\noutput [ { name: "OUT", data_type: TYPE_FP32, dims: [ -1 ] } ]\n');
    return repo;
  }

  test('a missing --grpc-server-cert exits 1 naming the flag and the path', () => {
    const r = spawnSync(process.execPath, [MAIN(), 'serve', `--model-repository=${repository()}`,
      '--allow-http=false', '--allow-metrics=false', '--grpc-port=0', '--grpc-address=127.0.0.1',
      '--grpc-use-ssl', `--grpc-server-cert=${file('nope.crt')}`, `--grpc-server-key=${file('server.key')}`,
    ], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`grpcServerCert (--grpc-server-cert) '${file('nope.crt')}' cannot be read: the file does not exist`);
  });

  test('the TLS flags serve HTTPS and gRPC with required client certificates', async () => {
    const child = spawn(process.execPath, [MAIN(), 'serve', `--model-repository=${repository()}`, '--allow-metrics=false',
      '--http-address=127.0.0.1', '--http-port=0', '--grpc-address=127.0.0.1', '--grpc-port=0',
      '--http-use-ssl-mutual=true', `--http-server-cert=${file('server.crt')}`, `--http-server-key=${file('server.key')}`,
      `--http-root-cert=${file('ca.crt')}`,
      '--grpc-use-ssl-mutual', `--grpc-server-cert=${file('server.crt')}`, `--grpc-server-key=${file('server.key')}`,
      `--grpc-root-cert=${file('ca.crt')}`,
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const serving = new Promise<string>((resolve, reject) => {
      const onData = (d: Buffer): void => {
        output += d.toString();
        if (/serving .*\n/.test(output)) resolve(output);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      void exited.then(() => reject(new Error(`infernode serve exited:\n${output}`)));
    });
    try {
      const log = await serving;
      expect(log).toContain('HTTPService uses TLS (HTTPS) and requires client certificates');
      expect(log).toContain('GRPCInferenceService uses TLS and requires client certificates');
      const http = Number(/http on port (\d+)/.exec(log)![1]);
      const grpc = Number(/grpc on port (\d+)/.exec(log)![1]);
      expect(await inferThrough(https(http, { sslOptions: { caCerts: file('ca.crt'), ...clientCert } }))).toEqual([1, 2, 3]);
      expect(await inferThrough(grpcs(grpc, {
        rootCertificates: file('ca.crt'), certificateChain: file('client.crt'), privateKey: file('client.key'),
      }))).toEqual([1, 2, 3]);
      const bare = https(http, { sslOptions: { caCerts: file('ca.crt') } });
      await expect(bare.serverLive()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
      await bare.close();
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 60_000);
});
