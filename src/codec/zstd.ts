import { createRequire } from 'node:module';
import { GitError, corrupt } from '../errors.js';

/**
 * zstd behind a small interface, on zstd-napi (chosen by measurement: docs/decisions.md —
 * synchronous, reusable contexts, prepared dictionaries, 1–3 µs per small object).
 *
 * Frames are "lean": no content size, no dictionary id, no checksum, no 4-byte magic (zstd's
 * magicless format). The entry header already carries the size, the pack the dictionary and
 * a CRC32 per entry, so those fields would only cost 6–9 bytes per object.
 */
export interface ZstdCodec {
  readonly version: string;
  /** Compresses `data` at `level` with dictionary number `dict` (-1: none). */
  compress(data: Uint8Array, level: number, dict: number): Buffer;
  /** Decompresses a lean frame that must yield exactly `size` bytes. */
  decompress(frame: Uint8Array, size: number, dict: number, into?: Buffer): Buffer;
  /**
   * A lean frame decompressed as it is read, for an object too large to hold (git's streaming
   * of blobs above core.bigFileThreshold): `feed` takes the frame's next bytes and yields what
   * they decode to, at most `chunk` bytes a piece (each piece a buffer of its own, or with
   * `reuse` a view of one buffer, good until the next piece is asked for); `end` says whether the
   * frame ended exactly there.
   */
  frameReader(dict: number, chunk?: number, reuse?: boolean): { feed(input: Uint8Array): Generator<Buffer>; ended(): boolean };
  /**
   * A lean frame written as its object is read (the writing side of `frameReader`): `feed`
   * compresses the next bytes and yields the frame bytes ready so far, `end` the rest. Each
   * piece is a view of one reused buffer of `chunk` bytes, good until the next is asked for.
   * The same bytes give the same frame however they are cut into pieces.
   */
  frameWriter(level: number, dict: number, chunk?: number): { feed(input: Uint8Array): Generator<Buffer>; end(): Generator<Buffer> };
  /** The longest frame `n` bytes can give (ZSTD_compressBound): what is left of an object can grow no more. */
  bound(n: number): number;
}

interface Binding {
  CCtx: new () => {
    setParameter(p: number, v: number): void;
    loadDictionary(d: Uint8Array): void;
    compress2(dst: Uint8Array, src: Uint8Array): number;
    compressStream2(dst: Uint8Array, src: Uint8Array, endOp: number): [returnValue: number, produced: number, consumed: number];
    reset(directive: number): void;
  };
  DCtx: new () => {
    setParameter(p: number, v: number): void;
    loadDictionary(d: Uint8Array): void;
    decompress(dst: Uint8Array, src: Uint8Array): number;
    decompressStream(dst: Uint8Array, src: Uint8Array): [returnValue: number, produced: number, consumed: number];
    reset(directive: number): void;
  };
  CParameter: Record<string, number>;
  compressBound(n: number): number;
  versionString(): string;
}

/** ZSTD_c_format / ZSTD_d_format (experimental parameters) and ZSTD_f_zstd1_magicless. */
const ZSTD_C_FORMAT = 10;
const ZSTD_D_FORMAT = 1000;
const MAGICLESS = 1;
/** ZSTD_reset_session_only: a new frame, the dictionary and parameters kept. */
const RESET_SESSION = 1;
/** ZSTD_e_continue / ZSTD_e_end (ZSTD_EndDirective). */
const CONTINUE = 0;
const END = 2;

let binding: Binding | undefined;
let loadError: string | undefined;

function load(): Binding | undefined {
  if (binding !== undefined || loadError !== undefined) return binding;
  try {
    const require = createRequire(import.meta.url);
    binding = require('zstd-napi/binding') as Binding;
  } catch (e) {
    loadError = (e as Error).message.split('\n')[0];
  }
  return binding;
}

/**
 * Turns zstd off for this process, as on a machine where the native build failed (tests, and
 * users who want to check: cli/ calls it for GIT_REPACK_TS_NO_ZSTD=1).
 */
export function disableZstd(why: string): void {
  binding = undefined;
  loadError = why;
}

/** Why zstd is not available, or undefined when it is. */
export function zstdUnavailable(): string | undefined {
  load();
  return binding === undefined ? `zstd is not available (the optional dependency zstd-napi did not build or load: ${loadError})` : undefined;
}

/** A codec over the given dictionaries (their index is the `dict` argument). */
export function zstdCodec(dicts: Uint8Array[]): ZstdCodec {
  const b = load();
  if (b === undefined) throw new GitError('unsupported', zstdUnavailable()!);
  const cctxs = new Map<string, InstanceType<Binding['CCtx']>>();
  const dctxs = new Map<number, InstanceType<Binding['DCtx']>>();
  let scratch = Buffer.allocUnsafe(1 << 16);
  const cctx = (level: number, dict: number): InstanceType<Binding['CCtx']> => {
    const key = `${level}/${dict}`;
    let c = cctxs.get(key);
    if (c === undefined) {
      c = new b.CCtx();
      c.setParameter(b.CParameter.compressionLevel!, level);
      c.setParameter(b.CParameter.contentSizeFlag!, 0);
      c.setParameter(b.CParameter.checksumFlag!, 0);
      c.setParameter(b.CParameter.dictIDFlag!, 0);
      c.setParameter(ZSTD_C_FORMAT, MAGICLESS);
      if (dict >= 0) c.loadDictionary(dicts[dict]!);
      cctxs.set(key, c);
    }
    return c;
  };
  const dctx = (dict: number): InstanceType<Binding['DCtx']> => {
    let d = dctxs.get(dict);
    if (d === undefined) {
      d = new b.DCtx();
      d.setParameter(ZSTD_D_FORMAT, MAGICLESS);
      if (dict >= 0) d.loadDictionary(dicts[dict]!);
      dctxs.set(dict, d);
    }
    return d;
  };
  return {
    version: b.versionString(),
    compress(data, level, dict) {
      const bound = b.compressBound(data.length);
      if (scratch.length < bound) scratch = Buffer.allocUnsafe(Math.max(bound, scratch.length * 2));
      const n = cctx(level, dict).compress2(scratch, data);
      return Buffer.from(scratch.subarray(0, n));
    },
    decompress(frame, size, dict, into) {
      // One byte of room more than declared: a frame that decodes to more is caught below.
      const room = into !== undefined && into.length > size ? into.subarray(0, size + 1) : Buffer.allocUnsafe(size + 1);
      let n: number;
      try {
        n = dctx(dict).decompress(room, frame);
      } catch (e) {
        throw new GitError('bad-object', `zstd: ${(e as Error).message}`);
      }
      if (n !== size) throw new GitError('bad-object', `zstd frame decodes to ${n > size ? `more than ${size}` : n} bytes, not the declared ${size}`);
      return room.subarray(0, size);
    },
    frameReader(dict, chunk = 1 << 20, reuse = false) {
      const d = dctx(dict);
      const kept = reuse ? Buffer.allocUnsafe(chunk) : undefined;
      d.reset(RESET_SESSION);
      let left = 1; // ZSTD_decompressStream's hint: 0 once the frame is complete
      return {
        *feed(input) {
          let at = 0;
          // Until the frame ends, or the input is used up and the output no longer fills a piece.
          for (;;) {
            const out = kept ?? Buffer.allocUnsafe(chunk);
            let r: [number, number, number];
            try {
              r = d.decompressStream(out, input.subarray(at));
            } catch (e) {
              throw new GitError('bad-object', `zstd: ${(e as Error).message}`);
            }
            left = r[0];
            at += r[2];
            if (r[1] > 0) yield out.subarray(0, r[1]);
            if (left === 0) {
              if (at < input.length) throw new GitError('bad-object', 'zstd: data after the end of the frame');
              return;
            }
            if (r[1] < chunk && at >= input.length) return; // more input needed
          }
        },
        ended: () => left === 0,
      };
    },
    frameWriter(level, dict, chunk = 1 << 20) {
      const c = cctx(level, dict);
      c.reset(RESET_SESSION);
      const out = Buffer.allocUnsafe(chunk);
      function* run(input: Uint8Array, op: number): Generator<Buffer> {
        for (let at = 0; ; ) {
          const [left, produced, consumed] = c.compressStream2(out, input.subarray(at), op);
          at += consumed;
          if (produced > 0) yield out.subarray(0, produced);
          // Done when the input is taken and the output did not fill (to continue) or all is out (to end).
          if (at >= input.length && (op === CONTINUE ? produced < out.length : left === 0)) return;
        }
      }
      return { feed: (input) => run(input, CONTINUE), end: () => run(new Uint8Array(0), END) };
    },
    bound: (n) => b.compressBound(n),
  };
}

/**
 * A zstd pack entry's data given in pieces (Pack.inflateChunked): plain when it has exactly the
 * declared size, else one frame decompressed a chunk at a time (as Pack.unzstd, never held
 * whole); into `into`, or each piece to `sink` (a view good until the next). `file` and `offset`
 * (the data's) name a problem.
 */
export function unzstdPieces(codec: ZstdCodec, dict: number, pieces: Iterable<Uint8Array>, dataLen: number, size: number, into: Buffer | undefined, sink: (bytes: Uint8Array) => void, file: string, offset: number): void {
  if (dataLen > size && size > 0) throw corrupt('bad-object', file, offset, `zstd frame of ${dataLen} bytes for ${size} bytes of data`);
  const reader = dataLen === size ? undefined : codec.frameReader(dict, 1 << 20, true);
  let got = 0;
  for (const piece of pieces) {
    for (const o of reader === undefined ? [piece] : reader.feed(piece)) {
      if (got + o.length > size) throw corrupt('bad-object', file, offset, `zstd data longer than the declared ${size} bytes`);
      if (into !== undefined) into.set(o, got);
      else sink(o);
      got += o.length;
    }
  }
  if ((reader !== undefined && !reader.ended()) || got !== size) throw corrupt('bad-object', file, offset, `zstd data of ${got} bytes, not the declared ${size}`);
}
