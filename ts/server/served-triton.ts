/**
 * The server layer's view of the Triton it serves. ts/server/** depends on this interface, never
 * on ts/triton.ts: the `Triton` class sits above the server layer, implements this and starts
 * the frontends (docs/architecture.md, "Layers of ts/"), as `ModelRegistry` does for the
 * repository manager.
 */
import type { TritonConfig } from '../config/types';
import type { BoundModel } from '../model';
import type { RequestSink } from '../cache/model-cache';
import type { IndexEntry, LoadOverride } from '../repository/manager';

/**
 * What the frontends use of the Triton they serve (the `Triton` class implements it): its
 * settings, readiness, the model lookup and the repository API. Called on the main thread only.
 */
export interface ServedTriton {
  readonly config: TritonConfig;
  /** True between run() and stop(). */
  isConnected(): boolean;
  /** Serving, and (strict readiness) every known model ready. */
  isReady(): boolean;
  /** Every bound model version. */
  models(): BoundModel[];
  /** Every serving version of a model, oldest first; NOT_FOUND when the name is unknown. */
  modelVersions(name: string): BoundModel[];
  /** A serving model (latest version when none is given): NOT_FOUND / UNAVAILABLE when it is not. */
  model(name: string, version?: number): BoundModel;
  /** The repository index: bound models, then repository models. */
  repositoryIndex(readyOnly?: boolean): IndexEntry[];
  loadModel(name: string, override?: LoadOverride): Promise<void>;
  unloadModel(name: string): Promise<void>;
  /**
   * Has every serving model, and each one published later, report its successful requests to
   * the sink `sinkFor` gives it (the metrics frontend's); null: to none.
   * @internal
   */
  reportRequestsTo(sinkFor: ((model: BoundModel) => RequestSink | null) | null): void;
}
