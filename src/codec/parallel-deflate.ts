import { availableParallelism } from 'node:os';
import { constants, deflateRaw } from 'node:zlib';
import { Adler32 } from './zlib.js';

/**
 * One zlib stream deflated on several threads, the way pigz does it: the input is cut into
 * blocks, each block is raw-deflated on the libuv thread pool with the previous 32 KiB as preset
 * dictionary and ends with a sync flush (an empty stored block, so the next block starts on a byte
 * boundary), the last one with Z_FINISH; the pieces are concatenated in order under one zlib header,
 * and the Adler-32 of the whole input, computed here on the main thread, closes the stream.
 * The result is a valid RFC 1950 stream that any inflater reads as one; it is not byte-identical
 * to a single-threaded deflate at the same level (the blocks lose matches across boundaries
 * only beyond the 32 KiB window, and each boundary costs 5 bytes).
 */

/** Bytes of input per block: big enough that a block's deflate dwarfs the hand-off (~1 ms/MiB at level 1). */
export const DEFLATE_BLOCK = 1 << 20;
const WINDOW = 32 * 1024;

/** git's `zlib_compression_level` values are -1 (zlib's default, 6) or 0..9. */
function effectiveLevel(level: number): number {
  return level < 0 ? 6 : level;
}

/** The two-byte zlib header zlib itself writes for `level` (deflate.c: FLEVEL from the level). */
export function zlibHeader(level: number): Buffer {
  const l = effectiveLevel(level);
  const flevel = l < 2 ? 0 : l < 6 ? 1 : l === 6 ? 2 : 3;
  let h = (0x78 << 8) | (flevel << 6);
  h += 31 - (h % 31);
  return Buffer.from([h >> 8, h & 0xff]);
}

/** The last 32 KiB of `prev` followed by `block`, copied (the block goes back to the pool). */
function lastWindow(prev: Buffer | undefined, block: Buffer): Buffer {
  if (block.length >= WINDOW) return Buffer.from(block.subarray(block.length - WINDOW));
  const joined = prev === undefined ? block : Buffer.concat([prev, block]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - WINDOW)));
}

function deflateBlock(
  block: Buffer,
  level: number,
  dictionary: Buffer | undefined,
  last: boolean,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    deflateRaw(
      block,
      {
        level,
        // One output buffer for the whole block: with the default 16 KiB each piece of output is
        // a round trip between the pool thread and this one.
        chunkSize: Math.max(64 * 1024, block.length + (block.length >>> 3) + 1024),
        finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH,
        ...(dictionary !== undefined ? { dictionary } : {}),
      },
      (err, out) => (err ? reject(err) : resolve(out)),
    );
  });
}

export interface ParallelDeflateOptions {
  /** zlib level, -1..9 (git's `core.looseCompression` / `pack.compression`). */
  level: number;
  /** Blocks deflated at once; default: the available cores. */
  concurrency?: number;
  /** Receives the stream's bytes in order, synchronously. */
  onOutput: (piece: Buffer) => void;
}

/** Feed blocks with `push` (each one owned by the deflater until `end` returns), then `end`. */
export class ParallelDeflate {
  private readonly level: number;
  private readonly concurrency: number;
  private readonly onOutput: (piece: Buffer) => void;
  private readonly queue: Promise<Buffer>[] = [];
  /** Blocks whose jobs are done, for `acquire`: memory stays at (concurrency + 1) blocks. */
  private readonly free: Buffer[] = [];
  private readonly mine = new WeakSet<ArrayBufferLike>();
  /** The last 32 KiB of input so far: the next block's preset dictionary. */
  private dict: Buffer | undefined;
  private readonly adler = new Adler32();
  private ended = false;
  /** Compressed bytes emitted so far (header and trailer included). */
  outputBytes = 0;

  constructor(opts: ParallelDeflateOptions) {
    this.level = effectiveLevel(opts.level);
    this.concurrency = Math.max(1, opts.concurrency ?? availableParallelism());
    this.onOutput = opts.onOutput;
    this.emit(zlibHeader(this.level));
  }

  private emit(piece: Buffer): void {
    this.outputBytes += piece.length;
    this.onOutput(piece);
  }

  /** A block-sized buffer to fill and `push` (recycled from finished jobs). */
  acquire(): Buffer {
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    const b = Buffer.allocUnsafeSlow(DEFLATE_BLOCK);
    this.mine.add(b.buffer);
    return b;
  }

  /**
   * Queues one block (a view of a buffer from `acquire`, or any buffer the caller will not touch
   * again); `last` must be set on the final one, which may be empty.
   */
  async push(block: Buffer, last: boolean): Promise<void> {
    if (this.ended) throw new Error('ParallelDeflate: push after the last block');
    // zlib copies the dictionary into the stream's window when the job is created, before this returns.
    const job = deflateBlock(block, this.level, this.dict, last);
    const owner = this.mine.has(block.buffer)
      ? Buffer.from(block.buffer, 0, DEFLATE_BLOCK)
      : undefined;
    const tracked = job.then((out) => {
      if (owner !== undefined && this.free.length <= this.concurrency) this.free.push(owner);
      return out;
    });
    // Swallow here so a failing job that is not awaited yet is not reported as unhandled.
    tracked.catch(() => {});
    this.queue.push(tracked);
    this.adler.update(block);
    this.dict = lastWindow(this.dict, block);
    if (last) this.ended = true;
    while (this.queue.length > this.concurrency) this.emit(await this.queue.shift()!);
  }

  /** Waits for every block and writes the Adler-32 trailer. */
  async end(): Promise<void> {
    if (!this.ended) throw new Error('ParallelDeflate: end before the last block');
    while (this.queue.length > 0) this.emit(await this.queue.shift()!);
    this.emit(this.adler.digest());
  }

  /** Stops waiting for queued blocks (their results are dropped). */
  abandon(): void {
    this.queue.length = 0;
    this.ended = true;
  }
}
