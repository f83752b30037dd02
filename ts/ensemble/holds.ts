/**
 * Triton's model handles for ensemble requests (EnsembleContext: "obtain model handles of all
 * models in ensemble request such that they have the same lifetime as the ensemble request to
 * avoid unloading while the ensemble is executing"). An ensemble request resolves every step
 * model once, when it starts, and holds each until it settles; retiring a model (an unload, or
 * a reload replacing its version) waits for its holds before stopping it. So a request already
 * running finishes on the versions it started with, while new requests see the model gone or
 * the new version at once (the lookup no longer returns a retiring model).
 */
import type { BoundModel } from '../model';

interface Hold {
  count: number;
  /** Resolvers of whenReleased(), called when count reaches 0. */
  waiters: (() => void)[];
}

const holds = new WeakMap<BoundModel, Hold>();

/** Holds `model` until the returned function is called (calling it again does nothing). */
export function holdModel(model: BoundModel): () => void {
  let hold = holds.get(model);
  if (!hold) holds.set(model, hold = { count: 0, waiters: [] });
  hold.count++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--hold.count > 0) return;
    holds.delete(model);
    for (const wake of hold.waiters.splice(0)) wake();
  };
}

/**
 * Resolves once no ensemble request holds `model`, or after `timeoutMs` (a request that outlives
 * the unload's timeout then finds the model stopped, as a plain request would).
 */
export function whenReleased(model: BoundModel, timeoutMs: number): Promise<void> {
  const hold = holds.get(model);
  if (!hold || timeoutMs <= 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    hold.waiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
