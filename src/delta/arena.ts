/**
 * Memory for objects resolved depth first (a base, then its deltas, then theirs): every object
 * lives exactly as long as its frame on the resolution stack, so the objects are a stack too, and
 * one buffer with a top pointer serves them all. Without it each object was a buffer of its own;
 * on git.git's 849k objects the freed buffers left malloc fragmented and the process ~55 MB
 * larger than the live data (docs/benchmarks.md §6). An allocation that does not fit is a buffer
 * of its own, so the arena bounds memory, never object size.
 */
export class StackArena {
  private readonly buf: Buffer;
  private topAt = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafeSlow(bytes);
  }

  /** The current top, to `release` back to when the objects allocated after it are done. */
  get top(): number {
    return this.topAt;
  }

  /** `n` bytes: at the top of the arena, or a buffer of their own when they do not fit. */
  alloc(n: number): Buffer {
    const at = this.topAt;
    if (at + n > this.buf.length) return Buffer.allocUnsafeSlow(n);
    this.topAt = at + n;
    return this.buf.subarray(at, at + n);
  }

  /** Frees everything allocated since `top` returned `mark`. */
  release(mark: number): void {
    if (mark < this.topAt) this.topAt = mark;
  }
}
