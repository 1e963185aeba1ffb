import zlib from 'node:zlib';
import { corrupt } from '../errors.js';

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
interface NativeHandle {
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
  onerror: (message: string, errno: number) => void;
}

export interface InflateOutcome {
  produced: number;
  consumed: number;
  error: string | undefined;
}

const { Z_FINISH, Z_NO_FLUSH } = zlib.constants;

export class Inflater {
  /** The stream that owns the handle, kept referenced so that its engine is not collected. */
  private readonly stream: zlib.Inflate | undefined;
  private readonly handle: NativeHandle | undefined;
  private readonly state: Uint32Array | undefined;
  private error: string | undefined;
  private dirty = false;

  constructor() {
    const s = new zlib.Inflate() as unknown as {
      _handle?: NativeHandle;
      _writeState?: Uint32Array;
    };
    if (
      s._handle !== undefined &&
      s._writeState instanceof Uint32Array &&
      typeof s._handle.writeSync === 'function' &&
      typeof s._handle.reset === 'function'
    ) {
      this.stream = s as unknown as zlib.Inflate;
      this.handle = s._handle;
      this.state = s._writeState;
      this.handle.onerror = (message: string) => {
        this.error = message;
      };
    }
  }

  /** Inflates `input` (one complete zlib stream) into `out`; see the class comment. */
  inflate(input: Uint8Array, out: Uint8Array): InflateOutcome {
    if (this.handle === undefined) return fallback(input, out);
    if (this.dirty) this.handle.reset();
    this.dirty = true;
    this.error = undefined;
    this.handle.writeSync(Z_FINISH, input, 0, input.length, out, 0, out.length);
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

function fallback(input: Uint8Array, out: Uint8Array): InflateOutcome {
  try {
    const r = zlib.inflateSync(input, {
      info: true,
      maxOutputLength: Math.max(out.length, 1),
    }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    out.set(r.buffer.subarray(0, out.length));
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

/** Any deviation of an inflate from exactly `size` bytes out of exactly `inputLen` bytes in: a corrupt entry. */
function checkExact(
  r: InflateOutcome,
  size: number,
  inputLen: number,
  file: string,
  offset: number,
): void {
  if (r.error !== undefined)
    throw corrupt('bad-object', file, offset, `corrupt object data (zlib: ${r.error})`);
  if (r.produced > size)
    throw corrupt(
      'bad-object',
      file,
      offset,
      `corrupt object data (inflates to more than the declared ${size} bytes)`,
    );
  if (r.produced !== size) {
    throw corrupt(
      'bad-object',
      file,
      offset,
      `inflated size ${r.produced} does not match declared size ${size}`,
    );
  }
  if (r.consumed !== inputLen) {
    throw corrupt(
      'bad-object',
      file,
      offset,
      `zlib stream ends after ${r.consumed} of ${inputLen} bytes`,
    );
  }
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
