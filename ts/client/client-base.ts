/**
 * What HttpInferenceServerClient and GrpcInferenceServerClient share beyond the protocol: the
 * plugin every call passes its headers through (tritonclient's register_plugin), and the short
 * method names kept as aliases of tritonclient's for code written before them.
 */
import type { ModelMetadata, RepositoryIndexEntry, RepositoryIndexOptions, ServerMetadata } from './types';
import { ClientValueError } from './errors';

/** tritonclient's plugin: called with each request's headers before it is sent; may change them. */
export type ClientPlugin = (request: { headers: Record<string, string> }) => void;

export abstract class TritonClientBase {
  #plugin: ClientPlugin | null = null;

  abstract isServerLive(): Promise<boolean>;
  abstract isServerReady(): Promise<boolean>;
  abstract isModelReady(modelName: string, modelVersion?: string): Promise<boolean>;
  abstract getServerMetadata(): Promise<ServerMetadata>;
  abstract getModelMetadata(modelName: string, modelVersion?: string): Promise<ModelMetadata>;
  abstract getModelConfig(modelName: string, modelVersion?: string): Promise<Record<string, unknown>>;
  abstract getInferenceStatistics(modelName?: string, modelVersion?: string): Promise<{ model_stats: Record<string, unknown>[] }>;
  abstract getModelRepositoryIndex(options?: RepositoryIndexOptions): Promise<RepositoryIndexEntry[]>;

  /** Registers the plugin every later call passes its headers through (one at a time, as tritonclient). */
  registerPlugin(plugin: ClientPlugin): void {
    if (typeof plugin !== 'function') throw new ClientValueError('registerPlugin takes a function (request) => void that may change request.headers');
    this.#plugin = plugin;
  }

  /** The registered plugin, or null. */
  plugin(): ClientPlugin | null {
    return this.#plugin;
  }

  unregisterPlugin(): void {
    this.#plugin = null;
  }

  // The short names: aliases of tritonclient's, kept for code written before them.
  serverLive(): Promise<boolean> { return this.isServerLive(); }
  serverReady(): Promise<boolean> { return this.isServerReady(); }
  modelReady(modelName: string, modelVersion?: string): Promise<boolean> { return this.isModelReady(modelName, modelVersion); }
  serverMetadata(): Promise<ServerMetadata> { return this.getServerMetadata(); }
  modelMetadata(modelName: string, modelVersion?: string): Promise<ModelMetadata> { return this.getModelMetadata(modelName, modelVersion); }
  modelConfig(modelName: string, modelVersion?: string): Promise<Record<string, unknown>> { return this.getModelConfig(modelName, modelVersion); }
  modelStatistics(modelName?: string, modelVersion?: string): Promise<{ model_stats: Record<string, unknown>[] }> {
    return this.getInferenceStatistics(modelName, modelVersion);
  }
  repositoryIndex(readyOnly = false): Promise<RepositoryIndexEntry[]> { return this.getModelRepositoryIndex({ readyOnly }); }
}
