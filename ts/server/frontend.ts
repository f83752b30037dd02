/**
 * What each frontend (HTTP, gRPC, metrics) gives the Triton that started it: its port and the two
 * steps of its shutdown. Apart from frontends.ts, which starts them, so that each frontend can
 * name this type without importing the module that imports it.
 */
export interface Frontend {
  readonly kind: 'http' | 'grpc' | 'metrics';
  /** The port it listens on. */
  readonly port: number;
  /** Stop accepting new connections and calls; in-flight ones continue. */
  beginShutdown(): void;
  /** Close what is left. */
  close(): Promise<void>;
}
