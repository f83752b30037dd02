/**
 * 64-bit integers in JSON tensor data, read exactly as Triton reads them: JSON.parse turns
 * integers beyond 2^53 into the nearest double, so before parsing, integer literals of 16 digits
 * or more (outside strings) are wrapped as marked strings; the tensor decoder turns marks into
 * BigInts for INT64/UINT64 data, shared-memory offsets and byte sizes read them exactly (as
 * Triton's size_t), and every mark elsewhere goes back to the number JSON.parse would have
 * made. Text without such a literal is parsed as is (a regex test, nothing more). The marking
 * itself lives in ts/exact-json.ts, which model configs use too.
 */

import { markedInteger } from '../exact-json';

export { markBigIntegers, markedInteger } from '../exact-json';

/**
 * Marks outside `keep` (the tensors' data arrays, which the decoder reads, and single values
 * such as a shared-memory offset) turned back into numbers, so every other field sees what
 * JSON.parse gives.
 *
 * The walk is iterative and shares one path array, so it costs one step per JSON value whatever
 * the nesting: JSON.parse accepts any depth, and a recursive walk that copied the path at every
 * value cost depth x values (a 4 MB body of zeros nested 2,000 deep in an unused field held the
 * event loop for 22 s) and overflowed the stack deeper than that. `keep` sees that shared array:
 * it must not hold on to it.
 */
export function unmarkOutside(value: unknown, keep: (path: readonly (string | number)[]) => boolean): unknown {
  const path: (string | number)[] = [];
  const literal = markedInteger(value);
  if (literal !== null) return keep(path) ? value : Number(literal);
  if (value === null || typeof value !== 'object' || keep(path)) return value;
  /** The containers being walked, outermost first: each with its keys (null: an array) and the next to visit. */
  const stack: { node: Record<string | number, unknown>; keys: string[] | null; next: number }[] = [];
  const enter = (node: object): void => {
    stack.push({ node: node as Record<string | number, unknown>, keys: Array.isArray(node) ? null : Object.keys(node), next: 0 });
  };
  enter(value);
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const size = top.keys ? top.keys.length : (top.node as unknown as unknown[]).length;
    if (top.next >= size) {
      stack.pop();
      path.pop();  // the key under which `top` was entered (none for the root: a no-op)
      continue;
    }
    const key = top.keys ? top.keys[top.next] : top.next;
    top.next++;
    const child = top.node[key];
    const mark = markedInteger(child);
    if (mark === null && (child === null || typeof child !== 'object')) continue;
    path.push(key);
    if (mark !== null) {
      if (!keep(path)) top.node[key] = Number(mark);
      path.pop();
    } else if (keep(path)) {
      path.pop();
    } else {
      enter(child as object);
    }
  }
  return value;
}
