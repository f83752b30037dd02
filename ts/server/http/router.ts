/**
 * Routing of the HTTP/REST frontend: Triton's routes (triton-protocol.md §1.1), matched on the
 * URL path only (the query string is ignored: tritonclient may append one). A version in a
 * path is digits only; anything else does not match, as Triton's `[0-9]+` regexes. An unknown
 * path is 404 `Not Found`, a known path with another method 405 `Method Not Allowed`.
 *
 * Matching splits the path once and walks the segments: no regex per request, no allocation
 * beyond the split.
 */
import type { ApiGroup } from '../restrictions';

/** What a path names: the model, version, region or repository it carries. */
export interface RouteParams {
  model?: string;
  /** Digits, or undefined for the latest version. */
  version?: string;
  region?: string;
}

/** A route's handler name per method; handlers are looked up by name in server.ts. */
export type RouteName =
  | 'serverMetadata' | 'live' | 'ready' | 'modelReady' | 'modelMetadata' | 'modelConfig' | 'infer'
  | 'generate' | 'generateStream'
  | 'statistics' | 'repositoryIndex' | 'load' | 'unload'
  | 'systemStatus' | 'systemRegister' | 'systemUnregister' | 'cudaStatus' | 'cudaRegister' | 'cudaUnregister'
  | 'trace' | 'logging';

export interface Route {
  /** The API group a restriction (--http-restricted-api) applies to. */
  group: ApiGroup;
  /** Allowed methods. */
  methods: readonly ('GET' | 'POST')[];
  name: RouteName;
}

export interface Match {
  route: Route;
  params: RouteParams;
}

const route = (name: RouteName, group: ApiGroup, ...methods: ('GET' | 'POST')[]): Route => ({ name, group, methods });

const R = {
  serverMetadata: route('serverMetadata', 'metadata', 'GET'),
  live: route('live', 'health', 'GET'),
  ready: route('ready', 'health', 'GET'),
  modelReady: route('modelReady', 'health', 'GET'),
  modelMetadata: route('modelMetadata', 'metadata', 'GET'),
  modelConfig: route('modelConfig', 'model-config', 'GET'),
  infer: route('infer', 'inference', 'POST'),
  generate: route('generate', 'inference', 'POST'),
  generateStream: route('generateStream', 'inference', 'POST'),
  statistics: route('statistics', 'statistics', 'GET'),
  repositoryIndex: route('repositoryIndex', 'model-repository', 'POST'),
  load: route('load', 'model-repository', 'POST'),
  unload: route('unload', 'model-repository', 'POST'),
  systemStatus: route('systemStatus', 'shared-memory', 'GET'),
  systemRegister: route('systemRegister', 'shared-memory', 'POST'),
  systemUnregister: route('systemUnregister', 'shared-memory', 'POST'),
  cudaStatus: route('cudaStatus', 'shared-memory', 'GET'),
  cudaRegister: route('cudaRegister', 'shared-memory', 'POST'),
  cudaUnregister: route('cudaUnregister', 'shared-memory', 'POST'),
  trace: route('trace', 'trace', 'GET', 'POST'),
  logging: route('logging', 'logging', 'GET', 'POST'),
} as const;

const DIGITS = /^[0-9]+$/;

/** A path segment as a name: percent-decoded; undefined when empty or badly encoded. */
function name(segment: string | undefined): string | undefined {
  if (!segment) return undefined;
  if (!segment.includes('%')) return segment;
  try {
    const decoded = decodeURIComponent(segment);
    return decoded.length > 0 ? decoded : undefined;
  } catch {
    return undefined;
  }
}

/** `/v2/models/{m}[/versions/{v}]/...` */
function matchModel(seg: string[]): Match | null {
  const model = name(seg[3]);
  if (!model) return null;
  let i = 4;
  let version: string | undefined;
  if (seg[4] === 'versions') {
    if (!DIGITS.test(seg[5] ?? '')) return null;
    version = seg[5];
    i = 6;
  }
  const rest = seg.length - i;
  const params = { model, version };
  if (rest === 0) return { route: R.modelMetadata, params };
  if (rest === 1) {
    switch (seg[i]) {
      case 'ready': return { route: R.modelReady, params };
      case 'config': return { route: R.modelConfig, params };
      case 'infer': return { route: R.infer, params };
      case 'generate': return { route: R.generate, params };
      case 'generate_stream': return { route: R.generateStream, params };
      case 'stats': return { route: R.statistics, params };
      default: return null;
    }
  }
  // Per-model trace settings take no version (Triton rejects one in the path).
  if (rest === 2 && version === undefined && seg[i] === 'trace' && seg[i + 1] === 'setting') {
    return { route: R.trace, params };
  }
  return null;
}

/** `/v2/repository[/{repo}]/index` and `/v2/repository[/{repo}]/models/{m}/load|unload`. */
function matchRepository(seg: string[]): Match | null {
  // The repository name is accepted and ignored: every repository shares one namespace.
  const i = seg[3] === 'index' || seg[3] === 'models' ? 3 : 4;
  if (i === 4 && !name(seg[3])) return null;
  if (seg.length === i + 1 && seg[i] === 'index') return { route: R.repositoryIndex, params: {} };
  if (seg.length === i + 3 && seg[i] === 'models') {
    const model = name(seg[i + 1]);
    if (!model) return null;
    if (seg[i + 2] === 'load') return { route: R.load, params: { model } };
    if (seg[i + 2] === 'unload') return { route: R.unload, params: { model } };
  }
  return null;
}

/** `/v2/{system,cuda}sharedmemory[/region/{r}]/status|register|unregister`. */
function matchSharedMemory(seg: string[], cuda: boolean): Match | null {
  let region: string | undefined;
  let action: string | undefined;
  if (seg.length === 4) action = seg[3];
  else if (seg.length === 6 && seg[3] === 'region') {
    region = name(seg[4]);
    if (!region) return null;
    action = seg[5];
  } else return null;
  const params = { region };
  if (action === 'status') return { route: cuda ? R.cudaStatus : R.systemStatus, params };
  if (action === 'unregister') return { route: cuda ? R.cudaUnregister : R.systemUnregister, params };
  if (action === 'register' && region) return { route: cuda ? R.cudaRegister : R.systemRegister, params };
  return null;
}

/** The route of a request target (`/v2/...?query`); null when no route matches (404). */
export function matchRoute(url: string): Match | null {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const seg = path.split('/');
  if (seg[0] !== '' || seg[1] !== 'v2') return null;
  if (seg.length === 2) return { route: R.serverMetadata, params: {} };
  switch (seg[2]) {
    case 'health':
      if (seg.length !== 4) return null;
      if (seg[3] === 'live') return { route: R.live, params: {} };
      if (seg[3] === 'ready') return { route: R.ready, params: {} };
      return null;
    case 'models':
      if (seg.length === 4 && seg[3] === 'stats') return { route: R.statistics, params: {} };
      return seg.length >= 4 ? matchModel(seg) : null;
    case 'repository':
      return matchRepository(seg);
    case 'systemsharedmemory':
      return matchSharedMemory(seg, false);
    case 'cudasharedmemory':
      return matchSharedMemory(seg, true);
    case 'trace':
      return seg.length === 4 && seg[3] === 'setting' ? { route: R.trace, params: {} } : null;
    case 'logging':
      return seg.length === 3 ? { route: R.logging, params: {} } : null;
    default:
      return null;
  }
}
