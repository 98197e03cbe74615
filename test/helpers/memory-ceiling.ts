// Redis held at its memory ceiling (noeviction): every write that takes memory is refused with OOM.
import type { Redis } from 'ioredis';
import { expect } from 'vitest';

/**
 * Fills Redis to its maxmemory with 100 KB values, then lowers maxmemory to 1 MB under what is used:
 * filled right up to the limit, the server sits on the boundary (freed client buffers take it back
 * under, and a small write gets through), while a real ceiling refuses every write. Returns the number
 * of `filler:<n>` keys written (delete them to free the memory).
 */
export async function fillToCeiling(raw: Redis): Promise<number> {
  const value = 'x'.repeat(100_000);
  let n = 0;
  for (;;) {
    try {
      await raw.set(`filler:${n++}`, value);
    } catch (e) {
      expect((e as Error).message).toMatch(/^OOM command not allowed/);
      break;
    }
  }
  const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))![1]);
  await raw.config('SET', 'maxmemory', String(used - 1024 * 1024));
  await expect(raw.set('one-more', 'x')).rejects.toThrow(/^OOM command not allowed/);
  return n;
}
