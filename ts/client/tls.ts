/**
 * The certificate options of the clients. tritonclient takes file names (grpc's
 * root_certificates, private_key, certificate_chain; http's ssl_options ca_certs, certfile,
 * keyfile); infernode's clients take a file name, or the PEM bytes themselves as a Buffer.
 * Files are read when the client is made, so a bad path fails there, naming the option.
 */
import { readFileSync } from 'node:fs';
import { ClientValueError } from './errors';

/** A PEM file's path, or its contents. */
export type PemSource = string | Buffer;

/** The PEM bytes of `source`; ClientValueError naming `option` when the file cannot be read or is not PEM. */
export function readPem(source: PemSource, option: string): Buffer {
  let data: Buffer;
  if (Buffer.isBuffer(source)) {
    data = source;
  } else {
    try {
      data = readFileSync(source);
    } catch (err) {
      throw new ClientValueError(`${option} '${source}' cannot be read: ${(err as Error).message}`);
    }
  }
  if (!data.toString('latin1').includes('-----BEGIN ')) {
    throw new ClientValueError(`${option}${Buffer.isBuffer(source) ? '' : ` '${source}'`} is not PEM: it has no '-----BEGIN ...-----' line`);
  }
  return data;
}

/** readPem, or undefined when the option is not given. */
export function readOptionalPem(source: PemSource | undefined, option: string): Buffer | undefined {
  return source === undefined ? undefined : readPem(source, option);
}

/** True for the error codes of a failed TLS handshake or certificate check (node:tls, OpenSSL). */
export function isTlsFailure(code: string | undefined): boolean {
  return code !== undefined && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO|HOSTNAME|ALTNAME/.test(code);
}
