/**
 * Restricted API groups (tritonserver's --http-restricted-api and --grpc-restricted-protocol):
 * `<group>[,<group>...]:<key>=<value>`, several specs separated by ';'. A request to a
 * restricted group must carry the header `<key>: <value>` (gRPC: metadata
 * `triton-grpc-protocol-<key>`), else it is refused (HTTP 403). A group may be restricted once.
 */
import { invalidArg } from '../errors';

export const API_GROUPS = [
  'health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace',
  'logging',
] as const;

export type ApiGroup = (typeof API_GROUPS)[number];

export interface Restriction {
  key: string;
  value: string;
}

/** Parses the restriction specs; `flag` names the option in error messages. */
export function parseRestrictions(spec: string | undefined, flag: string): Map<ApiGroup, Restriction> {
  const out = new Map<ApiGroup, Restriction>();
  if (!spec) return out;
  for (const part of spec.split(';').map((p) => p.trim()).filter(Boolean)) {
    const colon = part.lastIndexOf(':');
    const eq = part.indexOf('=', colon);
    if (colon <= 0 || eq <= colon + 1) {
      throw invalidArg(`${flag}: '${part}' must look like <group>[,<group>]:<key>=<value>`);
    }
    const restriction = { key: part.slice(colon + 1, eq).trim().toLowerCase(), value: part.slice(eq + 1) };
    for (const raw of part.slice(0, colon).split(',')) {
      const group = raw.trim() as ApiGroup;
      // Triton's words first (its QA matches them): HTTP restricts "api"s, gRPC "protocol"s.
      const kind = flag.includes('grpc') ? 'protocol' : 'api';
      if (!API_GROUPS.includes(group)) {
        throw invalidArg(`unknown restricted ${kind} '${raw.trim()}' (${flag}; groups: ${API_GROUPS.join(', ')})`);
      }
      if (out.has(group)) throw invalidArg(`restricted ${kind} '${group}' can not be specified in multiple config groups (${flag})`);
      out.set(group, restriction);
    }
  }
  return out;
}

/** The restriction a request to `group` fails, given a header lookup; null when allowed. */
export function failedRestriction(
  restrictions: Map<ApiGroup, Restriction>, group: ApiGroup, header: (key: string) => string | undefined,
): Restriction | null {
  const r = restrictions.get(group);
  if (!r) return null;
  return header(r.key) === r.value ? null : r;
}
