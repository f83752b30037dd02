/**
 * The TLS settings of the gRPC frontend (tritonserver's --grpc-use-ssl, --grpc-use-ssl-mutual,
 * --grpc-server-cert, --grpc-server-key, --grpc-root-cert) and of the HTTP frontend (infernode's
 * --http-* flags of the same shape; Triton has no HTTPS). Read once, when the frontend starts:
 * a missing, unreadable or non-PEM file, or a certificate and key that do not belong together,
 * fails start-up with an error naming the setting, its flag and the path.
 *
 * As in Triton, `useSslMutual` implies `useSsl`, and the files are ignored unless one of them is
 * true (a warning says so). Mutual TLS needs the root certificate: it is the CA client
 * certificates must be signed by.
 */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import type { TritonConfig } from '../config/types';
import { invalidArg } from '../errors';
import type { Logger } from '../log';

/** The PEM material a frontend serves TLS with. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  /** The root certificate(s): the CA client certificates are checked against; null when not given. */
  ca: Buffer | null;
  /** Require and verify a client certificate. */
  mutual: boolean;
}

type TlsKey = 'UseSsl' | 'UseSslMutual' | 'ServerCert' | 'ServerKey' | 'RootCert';
type Protocol = 'grpc' | 'http';

/** The TritonConfig field of a protocol's setting (`grpcServerCert`). */
function field(protocol: Protocol, key: TlsKey): keyof TritonConfig {
  return `${protocol}${key}` as keyof TritonConfig;
}

/** The field and its command-line flag, for messages: `grpcServerCert (--grpc-server-cert)`. */
export function settingName(protocol: Protocol, key: TlsKey): string {
  const name = field(protocol, key);
  return `${name} (--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)})`;
}

/** What a PEM file of each kind must hold: its first line's pattern, and that line as messages show it. */
interface PemKind {
  what: string;
  begins: RegExp;
  line: string;
}
const CERTIFICATE: PemKind = { what: 'a certificate', begins: /-----BEGIN CERTIFICATE-----/, line: '-----BEGIN CERTIFICATE-----' };
const CA_CERTIFICATE: PemKind = { ...CERTIFICATE, what: 'a CA certificate' };
/** PKCS#8 ("PRIVATE KEY") or the traditional RSA / EC forms. */
const PRIVATE_KEY: PemKind = { what: 'a private key', begins: /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/, line: '-----BEGIN [RSA |EC ]PRIVATE KEY-----' };

/** Reads one PEM file a setting names; the error names the setting, its flag and the path. */
function readPem(protocol: Protocol, key: TlsKey, path: string, kind: PemKind): Buffer {
  const setting = settingName(protocol, key);
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'the file does not exist' : (err as Error).message;
    throw invalidArg(`${setting} '${path}' cannot be read: ${reason}; give a PEM file holding ${kind.what}`);
  }
  if (!kind.begins.test(data.toString('latin1'))) {
    throw invalidArg(`${setting} '${path}' is not a PEM file holding ${kind.what}: it has no '${kind.line}' line`);
  }
  return data;
}

function requiredPath(config: TritonConfig, protocol: Protocol, key: TlsKey, because: string, what: string): string {
  const value = config[field(protocol, key)];
  if (typeof value !== 'string' || value === '') {
    throw invalidArg(`${settingName(protocol, key)} is required ${because}: give the PEM file holding ${what}`);
  }
  return value;
}

/**
 * The TLS material of `protocol`'s frontend, or null when it serves plaintext. Throws
 * INVALID_ARG naming the setting when a file cannot be used.
 */
export function loadServerTls(config: TritonConfig, protocol: Protocol, logger: Logger): ServerTls | null {
  const mutual = config[field(protocol, 'UseSslMutual')] === true;
  const useSsl = mutual || config[field(protocol, 'UseSsl')] === true;
  if (!useSsl) {
    const ignored = (['ServerCert', 'ServerKey', 'RootCert'] as const).filter((k) => config[field(protocol, k)] !== undefined);
    if (ignored.length > 0) {
      logger.warning(`${ignored.map((k) => settingName(protocol, k)).join(', ')} ignored: ` +
        `${settingName(protocol, 'UseSsl')} and ${settingName(protocol, 'UseSslMutual')} are false`);
    }
    return null;
  }
  const because = `when ${settingName(protocol, mutual ? 'UseSslMutual' : 'UseSsl')} is true`;
  const certPath = requiredPath(config, protocol, 'ServerCert', because, "the server's certificate");
  const keyPath = requiredPath(config, protocol, 'ServerKey', because, "the server's private key");
  const rootPath = mutual
    ? requiredPath(config, protocol, 'RootCert', because, 'the CA certificate that signs client certificates')
    : config[field(protocol, 'RootCert')] as string | undefined;
  const tls: ServerTls = {
    cert: readPem(protocol, 'ServerCert', certPath, CERTIFICATE),
    key: readPem(protocol, 'ServerKey', keyPath, PRIVATE_KEY),
    ca: rootPath ? readPem(protocol, 'RootCert', rootPath, CA_CERTIFICATE) : null,
    mutual,
  };
  // OpenSSL's own checks (a key that is not the certificate's, a damaged PEM body), here rather
  // than at the first handshake.
  try {
    createSecureContext({ cert: tls.cert, key: tls.key, ca: tls.ca ?? undefined });
  } catch (err) {
    throw invalidArg(`${protocol === 'grpc' ? 'gRPC' : 'HTTP'} TLS: the certificate '${certPath}' (${settingName(protocol, 'ServerCert')}), ` +
      `key '${keyPath}' (${settingName(protocol, 'ServerKey')})${rootPath ? ` and root certificate '${rootPath}' (${settingName(protocol, 'RootCert')})` : ''} ` +
      `cannot be used together: ${(err as Error).message}`);
  }
  return tls;
}
