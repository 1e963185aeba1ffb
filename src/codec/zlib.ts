import zlib from 'node:zlib';
import { codecDiagnostic, corrupt } from '../errors.js';
import { storedBlocksEqual, storedZlibLength, writeStoredBlocks } from '../format/zlib-stored.js';

/*
 * Every zlib stream this program reads goes through this module (as git's go through
 * git-zlib.c): one inflater over Node's native engine, one check that a stream inflates to
 * exactly the size it declares, one Adler-32, and the level-0 streams written without zlib.
 * Everything else (packs, loose objects, the proofs of re-encodes) calls these.
 */

/**
 * One zlib inflate engine, reset and reused for every stream, instead of `zlib.inflateSync`,
 * which builds a stream object and a fresh engine (inflateInit: state and 32 KiB window) per call.
 * On git.git's 587k commits and trees that construction cost more than the inflating itself
 * (see docs/benchmarks.md). It drives the engine's native handle the way `zlib.inflateSync` does
 * internally (`processChunkSync`): one `writeSync` with Z_FINISH into an output of the declared
 * size plus one byte. Where the handle is not there (another runtime), it falls back to
 * `inflateSync`.
 *
 * The outcome of one call, for an output buffer of `size + 1` bytes:
 * - zlib reported an error (bad data, bad Adler-32, stream cut short): `error` is its message;
 * - the output filled up: the stream inflates to more than `size` bytes;
 * - otherwise zlib reached Z_STREAM_END: `produced` bytes came out of the first `consumed` bytes.
 */
export interface NativeHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  reset(): void;
  onerror: (message: string, errno: number, code?: string) => void;
}

export interface InflateOutcome {
  produced: number;
  consumed: number;
  error: string | undefined;
}

const { Z_FINISH, Z_NO_FLUSH, Z_SYNC_FLUSH } = zlib.constants;

/**
 * The native engine of a node:zlib stream (src/node_zlib.cc, CompressionStream) and its
 * two-number write state (avail_out, avail_in), as `processChunkSync` drives them; undefined
 * where this runtime has no such handle. zstd-node.ts drives zstd contexts through it too.
 */
export function nativeEngine<H extends NativeHandle>(
  stream: object,
): { handle: H; state: Uint32Array } | undefined {
  const s = stream as { _handle?: H; _writeState?: unknown };
  if (typeof s._handle?.writeSync !== 'function' || !(s._writeState instanceof Uint32Array))
    return undefined;
  return { handle: s._handle, state: s._writeState };
}

export class Inflater {
  /** The stream that owns the handle, kept referenced so that its engine is not collected. */
  private readonly stream: zlib.Inflate | undefined;
  private readonly handle: NativeHandle | undefined;
  private readonly state: Uint32Array | undefined;
  private error: string | undefined;
  private dirty = false;

  constructor() {
    const s = new zlib.Inflate();
    const e = nativeEngine<NativeHandle>(s);
    if (e !== undefined && typeof e.handle.reset === 'function') {
      this.stream = s;
      this.handle = e.handle;
      this.state = e.state;
      this.handle.onerror = (message: string) => {
        this.error = message;
      };
    }
  }

  /**
   * Inflates `input` (one complete zlib stream) into `out`; see the class comment. With `prefix`,
   * `input` is only the start of a stream (Z_SYNC_FLUSH: its end is no error), as git's
   * `unpack_loose_header` inflates the first bytes of a loose object for its header.
   */
  inflate(input: Uint8Array, out: Uint8Array, prefix = false): InflateOutcome {
    if (this.handle === undefined) return fallback(input, out, prefix);
    if (this.dirty) this.handle.reset();
    this.dirty = true;
    this.error = undefined;
    const flush = prefix ? Z_SYNC_FLUSH : Z_FINISH;
    this.handle.writeSync(flush, input, 0, input.length, out, 0, out.length);
    const availOut = this.state![0]!;
    const availIn = this.state![1]!;
    return { produced: out.length - availOut, consumed: input.length - availIn, error: this.error };
  }

  /**
   * Inflates one zlib stream of `inputLen` bytes that arrives in pieces (an entry read a chunk at
   * a time), so that neither its compressed bytes nor, with a small `out`, its output are ever
   * held whole: what comes out goes to `sink` as it comes, and `out` is used again each time it
   * fills. Stops as soon as more than `limit` bytes came out. The outcome is the whole stream's,
   * as for `inflate`; the piece that completes `inputLen` goes in with Z_FINISH, so a stream cut
   * short is zlib's error. zlib keeps no reference to a piece: the caller may reuse its memory.
   */
  inflatePieces(
    pieces: Iterable<Uint8Array>,
    inputLen: number,
    out: Uint8Array,
    limit: number,
    sink: (bytes: Uint8Array) => void,
  ): InflateOutcome {
    if (this.handle === undefined || inputLen === 0)
      return fallbackPieces(pieces, out, limit, sink);
    const it = this.inflating(pieces, inputLen, out, limit);
    for (let r = it.next(); ; r = it.next()) {
      if (r.done === true) return r.value;
      sink(r.value);
    }
  }

  /**
   * `inflatePieces` as a generator, for a caller that waits between pieces of output (the
   * rewrite's streamed re-encodes, which feed an asynchronous deflate): each piece is yielded as
   * it comes, the outcome returned at the end. A piece is a view of `out`, good until the next is
   * asked for; with `fresh`, a new `out` of the same size is taken whenever one fills, so that a
   * piece stays as it is (as Node's inflate stream gives them: the same pieces, cut at the same
   * places). Use an Inflater of its own: between pieces, others may run on this thread.
   */
  *inflating(
    pieces: Iterable<Uint8Array>,
    inputLen: number,
    out: Uint8Array,
    limit: number,
    fresh = false,
  ): Generator<Uint8Array, InflateOutcome> {
    if (this.handle === undefined || inputLen === 0) {
      const got: Uint8Array[] = [];
      const r = fallbackPieces(pieces, out, limit, (b) => got.push(Uint8Array.from(b)));
      yield* got;
      return r;
    }
    if (this.dirty) this.handle.reset();
    this.dirty = true;
    this.error = undefined;
    let produced = 0;
    let consumed = 0;
    let at = 0;
    for (const input of pieces) {
      const flush = consumed + input.length >= inputLen ? Z_FINISH : Z_NO_FLUSH;
      for (let inOff = 0; ;) {
        this.handle.writeSync(flush, input, inOff, input.length - inOff, out, at, out.length - at);
        const availOut = this.state![0]!;
        const availIn = this.state![1]!;
        const have = out.length - at - availOut;
        inOff = input.length - availIn;
        produced += have;
        if (this.error !== undefined)
          return { produced, consumed: consumed + inOff, error: this.error };
        if (produced > limit) return { produced, consumed: consumed + inOff, error: undefined };
        if (have > 0) yield out.subarray(at, at + have);
        at += have;
        if (availOut === 0) {
          // `out` is full: used again (or a new one) for what this piece still gives
          at = 0;
          if (fresh) out = Buffer.allocUnsafe(out.length);
          continue;
        }
        // Room left over with input unread: the stream ended inside this piece.
        if (availIn > 0) return { produced, consumed: consumed + inOff, error: undefined };
        break;
      }
      consumed += input.length;
    }
    return { produced, consumed, error: undefined };
  }
}

function fallback(input: Uint8Array, out: Uint8Array, prefix = false): InflateOutcome {
  try {
    // (a prefix is inflated whole, ~1000 times its length at most: the part that fits is wanted)
    const r = zlib.inflateSync(input, {
      info: true,
      finishFlush: prefix ? Z_SYNC_FLUSH : Z_FINISH,
      ...(prefix ? {} : { maxOutputLength: Math.max(out.length, 1) }),
    }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    out.set(r.buffer.subarray(0, out.length));
    if (prefix)
      return { produced: Math.min(r.buffer.length, out.length), consumed: 0, error: undefined };
    return { produced: r.buffer.length, consumed: r.engine.bytesWritten, error: undefined };
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE')
      return { produced: out.length, consumed: 0, error: undefined };
    return { produced: 0, consumed: 0, error: err.message };
  }
}

/** `inflatePieces` without the native handle (or with nothing to feed it): the pieces joined. */
function fallbackPieces(
  pieces: Iterable<Uint8Array>,
  out: Uint8Array,
  limit: number,
  sink: (bytes: Uint8Array) => void,
): InflateOutcome {
  const room = out.length > limit ? out : new Uint8Array(limit + 1);
  const r = fallback(Buffer.concat([...pieces].map((p) => Uint8Array.from(p))), room);
  if (r.error === undefined && r.produced <= limit) sink(room.subarray(0, r.produced));
  return r;
}

let shared: Inflater | undefined;

/** The inflater of this thread (JavaScript runs one call at a time per thread). */
export function threadInflater(): Inflater {
  return (shared ??= new Inflater());
}

/**
 * Inflates a complete zlib stream of known output size; any deviation is a corrupt-entry error.
 * The result is exactly `size` bytes of its own memory (never a slice of a shared pool, which a
 * cached small object would keep alive), or of `into` when given (at least `size + 1` bytes).
 */
export function inflateExact(
  data: Uint8Array,
  size: number,
  file: string,
  offset: number,
  into?: Buffer,
): Buffer {
  const out =
    into !== undefined && into.length > size
      ? into.subarray(0, size + 1)
      : Buffer.allocUnsafeSlow(size + 1);
  checkExact(threadInflater().inflate(data, out), size, data.length, file, offset);
  return out.subarray(0, size);
}

/** What a stream of a pack entry or of a loose object is called when it is not what it declares. */
const TEXTS = {
  packed: {
    zlib: (m: string) => `corrupt object data (zlib: ${m})`,
    more: (size: number) =>
      `corrupt object data (inflates to more than the declared ${size} bytes)`,
    size: (got: number, size: number) =>
      `inflated size ${got} does not match declared size ${size}`,
  },
  loose: {
    zlib: (m: string) => `corrupt loose object (zlib: ${m})`,
    more: (size: number) => `inflates to more than the ${size} bytes its header declares`,
    size: (_got: number, size: number) => `loose object size does not match its header (${size})`,
  },
};

/**
 * The one check of an inflate (git's `unpack_compressed_entry` and `check_stream_oid`): exactly
 * `size` bytes out of exactly `inputLen` bytes in (undefined: trailing bytes are not looked at,
 * as for a loose object), else a corrupt-object error naming `file` and `offset`.
 */
function checkExact(
  r: InflateOutcome,
  size: number,
  inputLen: number | undefined,
  file: string,
  offset: number,
  what: keyof typeof TEXTS = 'packed',
): void {
  const t = TEXTS[what];
  const bad = (detail: string): Error => corrupt('bad-object', file, offset, detail);
  if (r.error !== undefined) throw bad(t.zlib(r.error));
  if (r.produced > size) throw bad(t.more(size));
  if (r.produced !== size) throw bad(t.size(r.produced, size));
  if (inputLen !== undefined && r.consumed !== inputLen)
    throw bad(`zlib stream ends after ${r.consumed} of ${inputLen} bytes`);
}

/**
 * `inflateExact` for a stream given in pieces of `inputLen` bytes in all (see `inflatePieces`):
 * into `out` whole when it has room for `size + 1` bytes, else through `out` piece by piece to `sink`.
 */
export function inflatePiecesExact(
  pieces: Iterable<Uint8Array>,
  inputLen: number,
  size: number,
  out: Buffer,
  sink: (bytes: Uint8Array) => void,
  file: string,
  offset: number,
): void {
  const room = out.length > size ? out.subarray(0, size + 1) : out;
  checkExact(
    threadInflater().inflatePieces(pieces, inputLen, room, size, sink),
    size,
    inputLen,
    file,
    offset,
  );
}

/** Where loose headers are inflated (the result of `inflateLooseHead` is a view of it). */
const headRoom = Buffer.allocUnsafeSlow(4096);

/**
 * The first bytes a loose object's stream `comp` (its file, or the file's start) inflates to, at
 * most `max` (git's `unpack_loose_header`): its header is in there. Up to 4096 bytes, a view
 * of this thread's buffer, good until the next call.
 */
export function inflateLooseHead(comp: Uint8Array, max: number, file: string): Buffer {
  const out = max <= headRoom.length ? headRoom.subarray(0, max) : Buffer.allocUnsafe(max);
  const r = threadInflater().inflate(comp, out, true);
  if (r.error !== undefined) throw corrupt('bad-object', file, 0, TEXTS.loose.zlib(r.error));
  return out.subarray(0, r.produced);
}

/**
 * A whole loose object's stream `comp`, whose header of `len` bytes declares `size` bytes of
 * data: the data, or the loose object's corrupt-object error.
 */
export function inflateLoose(comp: Uint8Array, len: number, size: number, file: string): Buffer {
  const out = Buffer.allocUnsafeSlow(len + size + 1);
  const r = threadInflater().inflate(comp, out);
  checkExact({ ...r, produced: r.produced - len }, size, undefined, file, 0, 'loose');
  return out.subarray(len, len + size);
}

/** The loose object's text for an inflate stream's error (`inflateStream`), or undefined for any other error. */
export function looseStreamError(e: unknown, file: string): Error | undefined {
  if ((e as NodeJS.ErrnoException).code?.startsWith('Z_') !== true) return undefined;
  return corrupt('bad-object', file, 0, TEXTS.loose.zlib(codecDiagnostic(e)), undefined, e);
}

/**
 * An inflating stream for data that arrives asynchronously a chunk at a time (a loose object too
 * large to hold, a streamed re-encode inflated again as it is written); its zlib errors carry
 * codes `Z_…` (see `looseStreamError`).
 */
export function inflateStream(chunkSize: number): zlib.Inflate {
  return zlib.createInflate({ chunkSize });
}

/** Where `inflatesTo` inflates (grows to the largest object proved; large ones let go). */
let proofRoom = Buffer.allocUnsafeSlow(1 << 16);

/** Does `stream` inflate to exactly `plain`, its whole length and nothing after? (the proof of a re-encode) */
export function inflatesTo(stream: Uint8Array, plain: Uint8Array): boolean {
  if (proofRoom.length < plain.length + 1)
    proofRoom = Buffer.allocUnsafeSlow(Math.max(plain.length + 1, proofRoom.length * 2));
  const r = threadInflater().inflate(stream, proofRoom.subarray(0, plain.length + 1));
  const same =
    r.error === undefined &&
    r.produced === plain.length &&
    r.consumed === stream.length &&
    proofRoom.compare(plain, 0, plain.length, 0, plain.length) === 0;
  if (proofRoom.length > 16 << 20) proofRoom = Buffer.allocUnsafeSlow(1 << 16);
  return same;
}

const ADLER_MOD = 65521;
/** zlib's NMAX: the sums stay below 2^32 between reductions, which keeps V8 on integer arithmetic. */
const ADLER_NMAX = 5552;

/** adler32 (RFC 1950) of `buf`, continuing from `adler`; unrolled by 16 (measured ~15% faster). */
export function adler32(buf: Uint8Array, adler = 1): number {
  let a = adler & 0xffff;
  let b = adler >>> 16;
  const n = buf.length;
  let i = 0;
  while (i < n) {
    const end = Math.min(i + ADLER_NMAX, n);
    const end16 = i + ((end - i) & ~15);
    while (i < end16) {
      a += buf[i]!;
      b += a;
      a += buf[i + 1]!;
      b += a;
      a += buf[i + 2]!;
      b += a;
      a += buf[i + 3]!;
      b += a;
      a += buf[i + 4]!;
      b += a;
      a += buf[i + 5]!;
      b += a;
      a += buf[i + 6]!;
      b += a;
      a += buf[i + 7]!;
      b += a;
      a += buf[i + 8]!;
      b += a;
      a += buf[i + 9]!;
      b += a;
      a += buf[i + 10]!;
      b += a;
      a += buf[i + 11]!;
      b += a;
      a += buf[i + 12]!;
      b += a;
      a += buf[i + 13]!;
      b += a;
      a += buf[i + 14]!;
      b += a;
      a += buf[i + 15]!;
      b += a;
      i += 16;
    }
    while (i < end) {
      a += buf[i++]!;
      b += a;
    }
    a %= ADLER_MOD;
    b %= ADLER_MOD;
  }
  return (b * 65536 + a) >>> 0;
}

/** A running Adler-32, as a hash is: the trailer of a zlib stream written in pieces (ParallelDeflate). */
export class Adler32 {
  private value = 1;

  update(buf: Uint8Array): this {
    this.value = adler32(buf, this.value);
    return this;
  }

  /** The four bytes of a zlib stream's trailer. */
  digest(): Buffer {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(this.value, 0);
    return b;
  }
}

/**
 * Writes `data` as a level-0 zlib stream (stored blocks, no zlib call) into `out` at `pos`;
 * returns the bytes written. `adler` is the Adler-32 of `data` when the caller already has it
 * (the trailer of a zlib stream that zlib has just inflated to `data`, and checked).
 */
export function writeStoredZlib(
  data: Uint8Array,
  out: Uint8Array,
  pos: number,
  adler?: number,
): number {
  return writeStoredBlocks(data, out, pos, adler ?? adler32(data));
}

export function storedZlib(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(storedZlibLength(data.length));
  writeStoredZlib(data, out, 0);
  return out;
}

/**
 * Is `stream` exactly `plain` in stored blocks (read without zlib: framing, content, Adler-32)?
 * `adler`, when given, is the Adler-32 of `plain` as zlib checked it.
 */
export function storedZlibEquals(stream: Uint8Array, plain: Uint8Array, adler?: number): boolean {
  return storedBlocksEqual(stream, plain, adler ?? (() => adler32(plain)));
}
