import zlib from 'node:zlib';
import { GitError } from '../errors.js';
import type { ZstdCodec } from './zstd.js';
import { nativeEngine, type NativeHandle } from './zlib.js';

/*
 * zstd on node:zlib (Node 22.19+, 24.6+: zstd with dictionaries, nothing to build). Its
 * one-call functions (zstdCompressSync) make a context and load the dictionary for each call:
 * 150 µs a frame against 16 µs on jq's objects (docs/benchmarks.md §5). So each context is kept
 * and driven as node's own zlibBufferSync drives it (lib/zlib.js, processChunkSync: the stream's
 * native handle, writeSync and its two-number write state), frame after frame: a zstd context
 * keeps its parameters and dictionary from one frame to the next. loadNodeZstd checks all of
 * that works, once, before this codec is used.
 *
 * node:zlib knows no ZSTD_d_format (its decoder parameters stop at 100), so frames are read
 * with zstd's 4-byte magic put back in front; ZSTD_c_format is one it passes on, so frames are
 * written magicless as they are.
 */

/** The native engine of a zlib stream (src/node_zlib.cc, CompressionStream; see nativeEngine). */
interface Handle extends NativeHandle {
  close(): void;
}
type Make = (opts: { params?: Record<number, number>; dictionary?: Uint8Array }) => object;

/** ZSTD_c_* parameters and ZSTD_EndDirective values, as in zstd.h (node:zlib's constants). */
const C_LEVEL = 100;
const C_CONTENT_SIZE = 200;
const C_CHECKSUM = 201;
const C_DICT_ID = 202;
/** ZSTD_c_format (experimental ZSTD_c_experimentalParam2) and ZSTD_f_zstd1_magicless. */
const C_FORMAT = 10;
const MAGICLESS = 1;
const CONTINUE = 0;
const END = 2;
/** ZSTD_MAGICNUMBER, little-endian: what makes a magicless frame a standard one again. */
const MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
/** Where the magic alone decodes to: nothing, one byte of room to show it. */
const NOWHERE = Buffer.alloc(1);

/** One node:zlib zstd context, kept from frame to frame. After an error it is closed and not used again. */
class Ctx {
  private failed: string | undefined;
  private closed = false;
  private constructor(
    private readonly handle: Handle,
    private readonly state: Uint32Array,
  ) {
    // Instead of zlib's own zlibOnError, which destroys the stream and raises the error later.
    handle.onerror = (message) => void (this.failed = message);
  }

  static make(create: Make, opts: Parameters<Make>[0]): Ctx {
    const e = nativeEngine<Handle>(create(opts));
    if (e === undefined) throw new Error('node:zlib has no zstd handle to drive');
    return new Ctx(e.handle, e.state);
  }

  /** ZSTD_compressStream2 or ZSTD_decompressStream once: [bytes produced into `out`, bytes of `input` taken]. */
  run(flush: number, input: Uint8Array, out: Uint8Array): [number, number] {
    if (this.failed === undefined)
      this.handle.writeSync(flush, input, 0, input.length, out, 0, out.length);
    if (this.failed !== undefined) {
      this.close();
      throw new GitError('bad-object', `zstd: ${this.failed}`);
    }
    return [out.length - this.state[0]!, input.length - this.state[1]!];
  }

  get ok(): boolean {
    return this.failed === undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.failed ??= 'context closed';
    // close() leaves zstd's context (window, tables: ~30 MiB at level 10 for a large object) to the
    // wrapper's collection, which V8 does not hurry; reset() replaces it with an empty one at once.
    this.handle.reset();
    this.handle.close();
  }
}

/**
 * Where a magicless frame ends, from its header and block headers alone (zstd's
 * ZSTD_findFrameCompressedSize): node:zlib's decoder does not say, and reads on into what follows.
 */
class FrameEnd {
  private held = 0; // the header being read, little-endian
  private got = 0;
  private want = 1; // the frame header descriptor, then 3-byte block headers
  private skip = 0;
  private checksum = 0;
  private last = false;
  done = false;

  /** How many of `b`'s bytes belong to the frame: all of them until it ends. */
  take(b: Uint8Array): number {
    let at = 0;
    for (;;) {
      const n = Math.min(this.skip, b.length - at);
      this.skip -= n;
      at += n;
      if (this.skip > 0) return at;
      if (this.last) this.done = true;
      if (this.done || at === b.length) return at;
      this.held |= b[at++]! << (8 * this.got++);
      if (this.got === this.want) this.parsed();
    }
  }

  private parsed(): void {
    const v = this.held;
    this.got = this.held = 0;
    if (this.want === 1) {
      // Frame_Header_Descriptor (RFC 8878 3.1.1.1.1): the window, dictionary id and content size fields that follow.
      const d = v;
      if ((d & 8) !== 0)
        throw new GitError('bad-object', 'zstd: reserved bit set in the frame header');
      const single = (d & 32) !== 0;
      this.checksum = (d & 4) !== 0 ? 4 : 0;
      this.skip = (single ? 0 : 1) + [0, 1, 2, 4][d & 3]! + [single ? 1 : 0, 2, 4, 8][d >> 6]!;
      this.want = 3;
      return;
    }
    // Block_Header: Last_Block, Block_Type (raw, RLE, compressed, reserved), Block_Size.
    const type = (v >> 1) & 3;
    if (type === 3) throw new GitError('bad-object', 'zstd: reserved block type');
    this.skip = type === 1 ? 1 : v >>> 3;
    if ((v & 1) !== 0) {
      this.last = true;
      this.skip += this.checksum;
    }
  }
}

/** ZSTD_COMPRESSBOUND (zstd.h), without 32-bit shifts. */
function bound(n: number): number {
  return n + Math.floor(n / 256) + (n < 128 << 10 ? ((128 << 10) - n) >> 11 : 0);
}

export interface NodeZstd {
  version: string;
  compress: Make;
  decompress: Make;
}

/**
 * node:zlib's zstd, or why it cannot serve: missing (before 22.15), without dictionaries (22.15
 * to 22.18 ignore the option), or a handle that does not behave. Checked with a frame made and
 * read back that is only that short with the dictionary.
 */
export function loadNodeZstd(): NodeZstd | string {
  const z = zlib as unknown as { createZstdCompress?: Make; createZstdDecompress?: Make };
  if (z.createZstdCompress === undefined || z.createZstdDecompress === undefined)
    return 'has no zstd in node:zlib (22.15 and later have)';
  const found: NodeZstd = {
    version: process.versions.zstd ?? 'unknown',
    compress: z.createZstdCompress,
    decompress: z.createZstdDecompress,
  };
  const dict = Buffer.from(
    'git-repack-ts checks that node:zlib zstd uses a dictionary. '.repeat(4),
  );
  const data = dict.subarray(0, 200);
  try {
    const codec = nodeCodec(found, [dict]);
    const frame = codec.compress(data, 3, 0);
    if (!codec.decompress(frame, data.length, 0).equals(data))
      return 'has a zstd in node:zlib that does not read back what it wrote';
    return frame.length < 20
      ? found
      : 'has a zstd in node:zlib without dictionaries (22.19 and later have them)';
  } catch (e) {
    return `has a zstd in node:zlib that cannot be driven (${(e as Error).message})`;
  }
}

/** A codec over the given dictionaries (their index is the `dict` argument), on node:zlib's zstd. */
export function nodeCodec(z: NodeZstd, dicts: Uint8Array[]): ZstdCodec {
  const dictionary = (dict: number): { dictionary?: Uint8Array } =>
    dict >= 0 ? { dictionary: dicts[dict]! } : {};
  const newCctx = (level: number, dict: number): Ctx => {
    // node:zlib takes 2^32-1 for "not set": no level -1 (ours are 1..22).
    if (level === -1) throw new RangeError('zstd level -1 cannot be set through node:zlib');
    return Ctx.make(z.compress, {
      params: {
        [C_LEVEL]: level,
        [C_CONTENT_SIZE]: 0,
        [C_CHECKSUM]: 0,
        [C_DICT_ID]: 0,
        [C_FORMAT]: MAGICLESS,
      },
      ...dictionary(dict),
    });
  };
  const newDctx = (dict: number): Ctx => {
    const d = Ctx.make(z.decompress, dictionary(dict));
    d.run(CONTINUE, MAGIC, NOWHERE);
    return d;
  };
  const cctxs = new Map<string, Ctx>();
  const dctxs = new Map<number, Ctx>();
  const kept = <K>(map: Map<K, Ctx>, key: K, make: () => Ctx): Ctx => {
    let c = map.get(key);
    if (c === undefined || !c.ok) map.set(key, (c = make()));
    return c;
  };
  // A frame streamed with the same dictionary (and level) as one before ends that one, as
  // zstd-napi's reset of its one context does: a context left mid-frame (streamed.ts's counting
  // pass stops early) holds its window and tables (~30 MiB at level 10) until closed, and V8 does
  // not see that memory to collect it.
  const streams = new Map<string, Ctx>();
  const fresh = (key: string, make: () => Ctx): Ctx => {
    streams.get(key)?.close();
    const c = make();
    streams.set(key, c);
    return c;
  };
  let scratch = Buffer.allocUnsafe(1 << 16);
  return {
    version: z.version,
    compress(data, level, dict) {
      const room = bound(data.length);
      if (scratch.length < room) scratch = Buffer.allocUnsafe(Math.max(room, scratch.length * 2));
      // One ZSTD_e_end call with room for the bound: zstd's one-shot path, the frame ZSTD_compress2 makes.
      const [n, taken] = kept(cctxs, `${level}/${dict}`, () => newCctx(level, dict)).run(
        END,
        data,
        scratch.subarray(0, room),
      );
      if (taken !== data.length || n === room)
        throw new Error(`zstd: ${data.length} bytes not compressed in one call`);
      return Buffer.from(scratch.subarray(0, n));
    },
    decompress(frame, size, dict, into) {
      const end = new FrameEnd();
      const n = end.take(frame);
      if (!end.done) throw new GitError('bad-object', 'zstd: the frame is cut short');
      if (n < frame.length)
        throw new GitError('bad-object', 'zstd: data after the end of the frame');
      // One byte of room more than declared: a frame that decodes to more is caught below.
      const room =
        into !== undefined && into.length > size
          ? into.subarray(0, size + 1)
          : Buffer.allocUnsafe(size + 1);
      const d = kept(dctxs, dict, () => newDctx(dict));
      const [got] = d.run(CONTINUE, frame, room);
      const next = d.run(CONTINUE, MAGIC, NOWHERE); // the next frame's magic, as for a fresh context
      if (got !== size || next[0] !== 0) {
        d.close();
        throw new GitError(
          'bad-object',
          `zstd frame decodes to ${got > size ? `more than ${size}` : got} bytes, not the declared ${size}`,
        );
      }
      return room.subarray(0, size);
    },
    frameReader: (dict, chunk = 1 << 20, reuse = false) =>
      frameReader(
        fresh(`d${dict}`, () => newDctx(dict)),
        chunk,
        reuse,
      ),
    // A context of its own: node:zlib cannot reset one to a new frame (its reset drops the dictionary).
    frameWriter: (level, dict, chunk = 1 << 20) =>
      frameWriter(
        fresh(`c${level}/${dict}`, () => newCctx(level, dict)),
        chunk,
      ),
    bound,
  };
}

/** ZstdCodec.frameReader on a decompression context of its own, closed once the frame has ended. */
function frameReader(d: Ctx, chunk: number, reuse: boolean): ReturnType<ZstdCodec['frameReader']> {
  const end = new FrameEnd();
  const keep = reuse ? Buffer.allocUnsafe(chunk) : undefined;
  return {
    *feed(input) {
      const wasDone = end.done;
      const mine = input.subarray(0, end.take(input));
      // Until the frame's bytes here are taken and the output no longer fills a piece.
      for (let at = 0; !wasDone;) {
        const out = keep ?? Buffer.allocUnsafe(chunk);
        const [produced, taken] = d.run(CONTINUE, mine.subarray(at), out);
        at += taken;
        if (produced > 0) yield out.subarray(0, produced);
        if (at >= mine.length && produced < chunk) break;
      }
      if (end.done) d.close();
      if (mine.length < input.length)
        throw new GitError('bad-object', 'zstd: data after the end of the frame');
    },
    ended: () => end.done,
  };
}

/** ZstdCodec.frameWriter on a compression context of its own, closed once the frame is out. */
function frameWriter(c: Ctx, chunk: number): ReturnType<ZstdCodec['frameWriter']> {
  const out = Buffer.allocUnsafe(chunk);
  function* run(input: Uint8Array, op: number): Generator<Buffer> {
    for (let at = 0; ;) {
      const [produced, taken] = c.run(op, input.subarray(at), out);
      at += taken;
      if (produced > 0) yield out.subarray(0, produced);
      // Done when the input is taken and the output did not fill: all that could go out (to continue), the whole frame (to end).
      if (at >= input.length && produced < out.length) {
        if (op === END) c.close();
        return;
      }
    }
  }
  return { feed: (input) => run(input, CONTINUE), end: () => run(new Uint8Array(0), END) };
}
