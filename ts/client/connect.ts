/**
 * From a URL to a client, as PyTriton reads URLs (`TritonUrl.from_url`): no scheme means http;
 * `http://` → the HTTP client (default port 8000), `grpc://` → the gRPC client (default port
 * 8001); any other scheme is refused. `localhost` → `http://localhost:8000`. With the `ssl`
 * option, the http URL is served over HTTPS.
 */
import { ClientInvalidUrlError } from './errors';
import { GrpcInferenceServerClient, type GrpcClientOptions } from './grpc';
import { HttpInferenceServerClient, type HttpClientOptions } from './http';
import type { InferenceServerClient } from './types';

export interface TritonUrl {
  scheme: 'http' | 'grpc';
  hostname: string;
  port: number;
  /** `<scheme>://<host>:<port>`. */
  url: string;
}

/**
 * Options of either client. TLS: `ssl` for both; then `sslOptions` (and `insecure`) for an http
 * URL, `rootCertificates` / `privateKey` / `certificateChain` for a grpc URL.
 */
export interface ClientOptions extends HttpClientOptions, GrpcClientOptions {}

/** Parses a Triton URL; ClientInvalidUrlError for other schemes or malformed URLs. */
export function parseTritonUrl(url: string): TritonUrl {
  const withScheme = url.includes('://') ? url : `http://${url}`;
  const scheme = withScheme.slice(0, withScheme.indexOf('://')).toLowerCase();
  if (scheme !== 'http' && scheme !== 'grpc') {
    throw new ClientInvalidUrlError(`invalid Triton URL '${url}': the scheme must be http or grpc, got '${scheme}'`);
  }
  let parsed: URL;
  try {
    // URL knows no grpc scheme defaults; parse it as http and apply Triton's ports.
    parsed = new URL(`http${withScheme.slice(scheme.length)}`);
  } catch {
    throw new ClientInvalidUrlError(`invalid Triton URL '${url}'`);
  }
  if (!parsed.hostname) throw new ClientInvalidUrlError(`invalid Triton URL '${url}': no host`);
  // The port as written: URL drops http's default 80 (parsed.port is ''), which must not fall
  // back to Triton's 8000/8001 (PyTriton keeps it: urllib's parsed_url.port).
  const authority = withScheme.slice(scheme.length + 3).split(/[/?#]/, 1)[0].replace(/^.*@/, '');
  const written = /:(\d+)$/.exec(authority);
  const port = written ? Number(written[1]) : scheme === 'http' ? 8000 : 8001;
  return { scheme, hostname: parsed.hostname, port, url: `${scheme}://${parsed.host.replace(/:\d+$/, '')}:${port}` };
}

/** The client a URL names. */
export function clientForUrl(url: string, options: ClientOptions = {}): InferenceServerClient {
  const parsed = parseTritonUrl(url);
  if (parsed.scheme === 'grpc') return new GrpcInferenceServerClient(parsed.url, options);
  // PyTriton's URLs have no https scheme: `ssl` turns http://host:port into HTTPS.
  return new HttpInferenceServerClient(options.ssl ? parsed.url.replace(/^http:/, 'https:') : parsed.url, options);
}
