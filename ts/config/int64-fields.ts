/**
 * The 64-bit fields of a model config, and what a value beyond 2^53 means in each.
 *
 * Triton's `inference.ModelConfig` has uint64 and int64 fields, and protobuf reads them exactly
 * over their whole range (config.pbtxt, and JSON numbers or strings); Triton's own tests use
 * 2^64 - 1 (qa/L0_config_json's `priority_levels: 18446744073709551615`). infernode reads them
 * exactly too (a JS number up to 2^53 - 1, a bigint beyond: `exactInteger`), prints them back
 * exactly, and per field:
 *
 * - served at any value: `dynamic_batching` `priority_levels`, `default_priority_level` and the
 *   `priority_queue_policy` keys (the native queue makes a level when a request first uses it,
 *   as Triton's does), the queue policies' `default_timeout_microseconds` (a timeout too long to
 *   count in ns never expires: cpp/core/clock.h DeadlineNs), and the batching delays and the
 *   sequence idle time (`max_queue_delay_microseconds`, `max_sequence_idle_microseconds`: the
 *   native schedulers wait at most 2^52 µs, about 142 years, kLongestWaitUs);
 * - carried as written (no effect on serving): `instance_group.secondary_devices.device_id`
 *   and the CUDA graph shapes of `optimization`;
 * - refused beyond 2^53 - 1 in magnitude (`refuseUnservableInt64`), where no model could use
 *   such a value: tensor dims and reshapes (no tensor has that many elements), warm-up and
 *   sequence state dims, and version numbers (`version_policy.specific.versions`, an ensemble
 *   step's `model_version`; version directories are numbered up to 2^53 - 1).
 */
import { invalidArg } from '../errors';
import type { ProtoJsonObject, ProtoJsonValue } from './proto-schema';

/** An unsigned 64-bit config value, exact: a number up to 2^53 - 1, a bigint beyond. */
export type Uint64 = number | bigint;

export const UINT64_MAX = 2n ** 64n - 1n;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A uint64 field of a bind() config or a parsed one: a safe integer, or a bigint up to 2^64 - 1;
 * `min` and up. Returns it in the canonical form (a number when safe). A JS number beyond
 * 2^53 - 1 is refused (it may already be rounded): such values are given as bigints.
 */
export function checkUint64(model: string, field: string, value: unknown, min = 0): Uint64 {
  const v = value ?? 0;
  if (typeof v === 'bigint') {
    if (v > UINT64_MAX) {
      throw invalidArg(`model '${model}': ${field} must be at most ${UINT64_MAX} (2^64 - 1, an unsigned 64-bit integer), got ${v}`);
    }
    if (v >= BigInt(min)) return v <= MAX_SAFE ? Number(v) : v;
  } else if (typeof v === 'number' && Number.isInteger(v) && v > Number.MAX_SAFE_INTEGER) {
    throw invalidArg(`model '${model}': ${field} is ${BigInt(v)}, beyond 2^53 - 1 (${Number.MAX_SAFE_INTEGER}), where a ` +
      `JavaScript number may already have been rounded; give it as a bigint (up to ${UINT64_MAX}n)`);
  } else if (Number.isSafeInteger(v) && (v as number) >= min) {
    return v as number;
  }
  throw invalidArg(`model '${model}': ${field} must be an integer >= ${min}, got ${typeof v === 'bigint' ? `${v}` : String(value)}`);
}

type Refuse = (path: string, value: bigint) => never;

function checkList(list: ProtoJsonValue | undefined, path: string, refuse: Refuse): void {
  if (!Array.isArray(list)) return;
  list.forEach((v, i) => {
    if (typeof v === 'bigint') refuse(`${path}[${i}]`, v);
  });
}

function objects(value: ProtoJsonValue | undefined): ProtoJsonObject[] {
  return Array.isArray(value) ? (value as ProtoJsonObject[]) : [];
}

/**
 * Refuses the 64-bit values of a parsed config that no model can be served with: a dimension
 * or a version number beyond 2^53 - 1 (in magnitude). INVALID_ARG naming the model, the field's
 * path as the config spells it, the value and what is allowed.
 */
export function refuseUnservableInt64(model: string, cfg: ProtoJsonObject): void {
  const dims: Refuse = (path, value) => {
    throw invalidArg(`model '${model}': ${path} is ${value}, which no tensor can have: a dimension is -1 ` +
      `(variable-size) or a size from 0 to ${Number.MAX_SAFE_INTEGER} (2^53 - 1)`);
  };
  for (const kind of ['input', 'output']) {
    objects(cfg[kind]).forEach((t, i) => {
      checkList(t.dims, `${kind}[${i}].dims`, dims);
      checkList((t.reshape as ProtoJsonObject | undefined)?.shape, `${kind}[${i}].reshape.shape`, dims);
    });
  }
  const sb = cfg.sequence_batching as ProtoJsonObject | undefined;
  objects(sb?.state).forEach((s, i) => {
    checkList(s.dims, `sequence_batching.state[${i}].dims`, dims);
    objects(s.initial_state).forEach((init, k) => checkList(init.dims, `sequence_batching.state[${i}].initial_state[${k}].dims`, dims));
  });
  objects(cfg.model_warmup).forEach((w, i) => {
    for (const [name, input] of Object.entries((w.inputs as ProtoJsonObject | undefined) ?? {})) {
      checkList((input as ProtoJsonObject).dims, `model_warmup[${i}].inputs[${JSON.stringify(name)}].dims`, dims);
    }
  });
  const versions: Refuse = (path, value) => {
    throw invalidArg(`model '${model}': ${path} is ${value}, which no version can have: versions are numbered from 1 to ` +
      `${Number.MAX_SAFE_INTEGER} (2^53 - 1)`);
  };
  const specific = (cfg.version_policy as ProtoJsonObject | undefined)?.specific as ProtoJsonObject | undefined;
  checkList(specific?.versions, 'version_policy.specific.versions', versions);
  objects((cfg.ensemble_scheduling as ProtoJsonObject | undefined)?.step).forEach((step, i) => {
    if (typeof step.model_version === 'bigint') {
      throw invalidArg(`model '${model}': ensemble_scheduling.step[${i}].model_version is ${step.model_version}, which no ` +
        `version can have: a step's model_version is -1 (the latest version) or a version from 1 to ${Number.MAX_SAFE_INTEGER} (2^53 - 1)`);
    }
  });
}

/** Map keys of a uint64-keyed map (decimal digits), in numeric order. */
export function sortedUint64Keys(keys: Iterable<string>): string[] {
  return [...keys].sort((a, b) => {
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
