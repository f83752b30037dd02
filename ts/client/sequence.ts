/**
 * The sequence batcher's request parameters as Triton's clients send them (tritonclient's
 * `_utils.py`): only for a sequence request (an id other than 0 and ""), and then always with
 * `sequence_start` and `sequence_end`, false unless asked for. Shared by the HTTP and gRPC clients.
 */
import { ClientValueError } from './errors';

/** What a request says about its sequence (ClientInferRequest's and ModelClient's options). */
export interface SequenceOptions {
  /**
   * The correlation id of the request's sequence: an unsigned 64-bit integer (a number up to
   * 2^53 - 1, or a bigint) or a string. 0 and "" (the default) mean "not a sequence".
   */
  sequenceId?: number | bigint | string;
  /** The first request of its sequence (default false). */
  sequenceStart?: boolean;
  /** The last request of its sequence (default false). */
  sequenceEnd?: boolean;
}

export interface SequenceParameters {
  /** A number when it is a safe integer, else a bigint (above 2^53 - 1), or a string. */
  id: number | bigint | string;
  start: boolean;
  end: boolean;
}

const UINT64_MAX = (1n << 64n) - 1n;

/** The parameters to send, or null when the request is not part of a sequence. */
export function sequenceParameters(options: SequenceOptions): SequenceParameters | null {
  const { sequenceId: id, sequenceStart, sequenceEnd } = options;
  for (const [key, flag] of [['sequenceStart', sequenceStart], ['sequenceEnd', sequenceEnd]] as const) {
    if (flag !== undefined && typeof flag !== 'boolean') throw new ClientValueError(`${key} must be a boolean, got ${typeof flag}`);
  }
  if (id === undefined || id === 0 || id === 0n || id === '') return null;
  const flags = { start: Boolean(sequenceStart), end: Boolean(sequenceEnd) };
  if (typeof id === 'string') return { id, ...flags };
  const valid = typeof id === 'bigint' ? id > 0n && id <= UINT64_MAX : Number.isSafeInteger(id) && id > 0;
  if (!valid) {
    throw new ClientValueError(`sequenceId must be an unsigned 64-bit integer (a number up to 2^53 - 1, or a bigint) or a ` +
      `string, got ${String(id)}`);
  }
  return { id: typeof id === 'bigint' && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id, ...flags };
}
