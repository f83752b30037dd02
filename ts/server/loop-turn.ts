/**
 * The event loop's iteration count: native loopTurns(), a number in shared memory that a
 * uv_prepare handle raises once per iteration, just before the poll phase. Reading it costs no
 * call into native code, so the frontends can ask on every request which turn it arrived in.
 */
import { native } from '../native';

let loopTurns: Float64Array | null = null;

/** The event loop's iteration count (one view per environment, made on first use). */
export function currentTurn(): number {
  return (loopTurns ??= native().loopTurns())[0];
}
