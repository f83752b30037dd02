/**
 * Ensembles in a model repository: the config checks only an ensemble has, the names of the
 * models it needs (so they load first), and the load of one ensemble version against the step
 * models that are serving.
 */
import { invalidArg } from '../errors';
import type { NormalizedModelConfig } from '../config/normalize';
import type { ProtoModelConfig } from '../config/model-config-proto';
import type { BoundModel } from '../model';
import { EnsembleModel } from './ensemble-model';
import { normalizeRawEnsembleScheduling, validateEnsemble, type StepConfigLookup } from './validate';

/** Whether a (raw) config declares an ensemble. */
export function isEnsembleConfig(cfg: { platform?: unknown; ensemble_scheduling?: unknown }): boolean {
  return cfg.platform === 'ensemble' || cfg.ensemble_scheduling !== undefined;
}

/**
 * Triton's config checks of an ensemble: platform 'ensemble' with ensemble_scheduling (one needs
 * the other), no instance_group (an ensemble has no instances: its steps run on theirs), no
 * dynamic_batching (its steps batch). Whether it is decoupled follows from its steps (as
 * Triton sets it), whatever its model_transaction_policy says.
 */
export function checkRawEnsemble(model: string, cfg: ProtoModelConfig): void {
  if (!isEnsembleConfig(cfg)) return;
  if (cfg.platform !== 'ensemble') {
    throw invalidArg(`model '${model}': ensemble_scheduling needs platform: "ensemble", got platform '${cfg.platform ?? ''}'`);
  }
  if (!cfg.ensemble_scheduling) throw invalidArg(`ensemble '${model}': platform 'ensemble' needs ensemble_scheduling { step [...] }`);
  if (cfg.backend) throw invalidArg(`ensemble '${model}': an ensemble has no backend, got backend '${cfg.backend}'`);
  if (cfg.instance_group?.length) {
    throw invalidArg(`ensemble '${model}': instance_group is not allowed on an ensemble (its steps run on their own models' instances); remove it`);
  }
  if (cfg.dynamic_batching) throw invalidArg(`ensemble '${model}': dynamic_batching is not allowed on an ensemble (its steps batch on their own models)`);
  normalizeRawEnsembleScheduling(model, cfg.ensemble_scheduling);
}

/** The models an ensemble's raw config names as steps (empty for any other model). */
export function stepModelNames(cfg: { platform?: unknown; ensemble_scheduling?: unknown }): string[] {
  if (!isEnsembleConfig(cfg)) return [];
  const steps = ((cfg.ensemble_scheduling as { step?: { model_name?: string }[] } | undefined)?.step ?? []);
  return [...new Set(steps.map((s) => s.model_name ?? '').filter((n) => n !== ''))];
}

/** A step model lookup (version -1: the latest); throws when it is not serving. */
export type StepModels = (name: string, version: number) => BoundModel;

/** One ensemble version: validated against the step models serving now. */
export function loadEnsembleVersion(config: NormalizedModelConfig, steps: StepModels): EnsembleModel {
  const lookup: StepConfigLookup = (name, version) => steps(name, version).config;
  const plan = validateEnsemble(config, lookup);
  return new EnsembleModel(config, plan, steps);
}
