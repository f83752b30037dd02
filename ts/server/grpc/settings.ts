/**
 * TraceSetting and LogSettings messages ↔ the settings objects the tracer and the logger keep
 * (the same objects the HTTP frontend shows as JSON). Trace values are string lists (an empty
 * list clears a per-model override, as Triton's does); log values are a oneof of bool, uint32
 * and string.
 */
import { invalidArg } from '../../errors';
import type { LogSettings } from '../../log';
import type { TraceSettings } from '../trace';

type SettingsMap = Record<string, Record<string, unknown>>;

/** TraceSettingRequest.settings → tracer changes (null clears). */
export function traceSettingsRequest(settings: unknown): Record<string, string[] | null> {
  const out: Record<string, string[] | null> = {};
  for (const [key, v] of Object.entries((settings ?? {}) as SettingsMap)) {
    const values = Array.isArray(v.value) ? (v.value as string[]) : [];
    out[key] = values.length === 0 ? null : values;
  }
  return out;
}

/** Tracer settings → TraceSettingResponse.settings. */
export function traceSettingsResponse(settings: TraceSettings): Record<string, { value: string[] }> {
  const out: Record<string, { value: string[] }> = {};
  for (const [key, value] of Object.entries(settings)) out[key] = { value: Array.isArray(value) ? value : [String(value)] };
  return out;
}

/** LogSettingsRequest.settings → logger changes. */
export function logSettingsRequest(settings: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries((settings ?? {}) as SettingsMap)) {
    const choice = v.parameter_choice;
    if (choice !== 'bool_param' && choice !== 'uint32_param' && choice !== 'string_param') {
      throw invalidArg(`log setting '${key}' has no value: set bool_param, uint32_param or string_param`);
    }
    out[key] = v[choice];
  }
  return out;
}

/** Logger settings → LogSettingsResponse.settings. */
export function logSettingsResponse(settings: LogSettings): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (typeof value === 'boolean') out[key] = { bool_param: value };
    else if (typeof value === 'number') out[key] = { uint32_param: value };
    else out[key] = { string_param: String(value) };
  }
  return out;
}
