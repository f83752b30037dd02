/**
 * The system and CUDA shared-memory extensions over HTTP: status, register, unregister
 * (triton-protocol.md §1.10). The SharedMemoryManager (ts/server/shared-memory.ts) owns the
 * regions, their bounds checks and the "disabled unless --allow-client-shm" rule; CUDA answers
 * clearly when no CUDA device exists.
 */
import { invalidArg } from '../../../errors';
import { readJsonObject } from '../body';
import type { HttpCall } from '../call';
import { sendEmpty, sendJson } from '../respond';

/** GET /v2/systemsharedmemory[/region/{r}]/status. */
export function systemStatus(call: HttpCall): void {
  const regions = call.ctx.sharedMemory.systemStatus(call.params.region);
  sendJson(call.res, 200, regions.map((r) => ({ name: r.name, key: r.key, offset: r.offset, byte_size: r.byteSize })));
}

/** POST /v2/systemsharedmemory/region/{r}/register, body {key, offset, byte_size}. */
export async function systemRegister(call: HttpCall): Promise<void> {
  const body = await readJsonObject(call.req, call.settings.maxInputSize);
  call.ctx.sharedMemory.registerSystem(call.params.region, body.key, body.offset, body.byte_size);
  sendEmpty(call.res, 200);
}

/** POST /v2/systemsharedmemory[/region/{r}]/unregister (all regions without a name). */
export async function systemUnregister(call: HttpCall): Promise<void> {
  await readJsonObject(call.req, call.settings.maxInputSize);
  call.ctx.sharedMemory.unregister('system', call.params.region);
  sendEmpty(call.res, 200);
}

/** GET /v2/cudasharedmemory[/region/{r}]/status. */
export function cudaStatus(call: HttpCall): void {
  const regions = call.ctx.sharedMemory.cudaStatus(call.params.region);
  sendJson(call.res, 200, regions.map((r) => ({ name: r.name, device_id: r.deviceId, byte_size: r.byteSize })));
}

/** POST /v2/cudasharedmemory/region/{r}/register, body {raw_handle: {b64}, device_id, byte_size}. */
export async function cudaRegister(call: HttpCall): Promise<void> {
  const body = await readJsonObject(call.req, call.settings.maxInputSize);
  call.ctx.sharedMemory.checkAllowed();  // before the handle is looked at, as Triton
  const handle = body.raw_handle as { b64?: unknown } | undefined;
  if (!handle || typeof handle !== 'object' || typeof handle.b64 !== 'string') {
    throw invalidArg(`CUDA shared memory region '${call.params.region}': 'raw_handle' must be {"b64": "<base64 cudaIpcMemHandle_t>"}`);
  }
  const raw = Buffer.from(handle.b64, 'base64');
  call.ctx.sharedMemory.registerCuda(call.params.region, raw, body.device_id, body.byte_size);
  sendEmpty(call.res, 200);
}

/** POST /v2/cudasharedmemory[/region/{r}]/unregister. */
export async function cudaUnregister(call: HttpCall): Promise<void> {
  await readJsonObject(call.req, call.settings.maxInputSize);
  call.ctx.sharedMemory.unregister('cuda', call.params.region);
  sendEmpty(call.res, 200);
}
