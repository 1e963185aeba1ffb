import { GitError, corrupt } from '../errors.js';
import { loadNapi, napiCodec } from './zstd-napi.js';
import { loadNodeZstd, nodeCodec } from './zstd-node.js';

/**
 * zstd behind a small interface, on one of two bindings: node:zlib's own zstd where it has
 * dictionaries (Node 22.19+, 24.6+: nothing to build), else the zstd-napi package where it is
 * installed (docs/decisions.md, "zstd from node:zlib"). Both write and read the same bytes.
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
  frameReader(
    dict: number,
    chunk?: number,
    reuse?: boolean,
  ): { feed(input: Uint8Array): Generator<Buffer>; ended(): boolean };
  /**
   * A lean frame written as its object is read (the writing side of `frameReader`): `feed`
   * compresses the next bytes and yields the frame bytes ready so far, `end` the rest. Each
   * piece is a view of one reused buffer of `chunk` bytes, good until the next is asked for.
   * The same bytes give the same frame however they are cut into pieces.
   */
  frameWriter(
    level: number,
    dict: number,
    chunk?: number,
  ): { feed(input: Uint8Array): Generator<Buffer>; end(): Generator<Buffer> };
  /** The longest frame `n` bytes can give (ZSTD_compressBound): what is left of an object can grow no more. */
  bound(n: number): number;
}

/** The bindings, in the order they are tried: Node's own first, nothing to build or trust. */
const BINDINGS = { node: 'node:zlib', napi: 'zstd-napi' } as const;
type Which = keyof typeof BINDINGS;

let only: Which | undefined;
let disabled: string | undefined;
let chosen: { codec: (dicts: Uint8Array[]) => ZstdCodec; name: string } | string | undefined;

/**
 * Turns zstd off for this process, as on a machine with neither binding (tests, and users who
 * want to check: cli/ calls it for GIT_REPACK_TS_NO_ZSTD=1).
 */
export function disableZstd(why: string): void {
  disabled = why;
  chosen = undefined;
}

/** Uses only the binding named `node` or `napi` (cli/: GIT_REPACK_TS_ZSTD, to compare them). */
export function onlyZstd(which: string): void {
  if (which === 'node' || which === 'napi') only = which;
  else disableZstd(`GIT_REPACK_TS_ZSTD=${which} names no binding (node or napi)`);
  chosen = undefined;
}

/** The first binding that loads, or why none did: each one's reason, then how to get one. */
function choose(): NonNullable<typeof chosen> {
  if (chosen !== undefined) return chosen;
  if (disabled !== undefined) return (chosen = `zstd is not available: ${disabled}`);
  const why: string[] = [];
  if (only !== 'napi') {
    const z = loadNodeZstd();
    if (typeof z !== 'string')
      return (chosen = { codec: (d) => nodeCodec(z, d), name: `${BINDINGS.node} ${z.version}` });
    why.push(`this Node.js (${process.version}) ${z}`);
  }
  if (only !== 'node') {
    const b = loadNapi();
    if (typeof b !== 'string')
      return (chosen = {
        codec: (d) => napiCodec(b, d),
        name: `${BINDINGS.napi} ${b.versionString()}`,
      });
    why.push(
      b.startsWith("Cannot find module 'zstd-napi")
        ? `zstd-napi is not installed beside git-repack-ts (${b})`
        : `zstd-napi did not load (${b})`,
    );
  }
  const how =
    only === 'node'
      ? 'Node.js 22.19 or later'
      : only === 'napi'
        ? '`npm install -g zstd-napi`'
        : 'Node.js 22.19 or later, or `npm install -g zstd-napi` beside git-repack-ts';
  return (chosen = `zstd is not available: ${why.join(', and ')}; use ${how}`);
}

/** Why zstd is not available (one line: what is missing and how to get it), or undefined when it is. */
export function zstdUnavailable(): string | undefined {
  const c = choose();
  return typeof c === 'string' ? c : undefined;
}

/** The binding zstd runs on, with zstd's version ("node:zlib 1.5.7"), or undefined without one. */
export function zstdBinding(): string | undefined {
  const c = choose();
  return typeof c === 'string' ? undefined : c.name;
}

/** The one error a zstd pack gets where zstd is not available: `file` cannot be read, and why. */
export function requireZstd(file: string): void {
  const why = zstdUnavailable();
  if (why !== undefined)
    throw new GitError('unsupported', `cannot read ${file}: ${why}`, { file, detail: why });
}

/** A codec over the given dictionaries (their index is the `dict` argument). */
export function zstdCodec(dicts: Uint8Array[]): ZstdCodec {
  const c = choose();
  if (typeof c === 'string') throw new GitError('unsupported', c);
  return c.codec(dicts);
}

/**
 * A zstd pack entry's data given in pieces (Pack.inflateChunked): plain when it has exactly the
 * declared size, else one frame decompressed a chunk at a time (as Pack.unzstd, never held
 * whole); into `into`, or each piece to `sink` (a view good until the next). `file` and `offset`
 * (the data's) name a problem.
 */
export function unzstdPieces(
  codec: ZstdCodec,
  dict: number,
  pieces: Iterable<Uint8Array>,
  dataLen: number,
  size: number,
  into: Buffer | undefined,
  sink: (bytes: Uint8Array) => void,
  file: string,
  offset: number,
): void {
  if (dataLen > size && size > 0)
    throw corrupt(
      'bad-object',
      file,
      offset,
      `zstd frame of ${dataLen} bytes for ${size} bytes of data`,
    );
  const reader = dataLen === size ? undefined : codec.frameReader(dict, 1 << 20, true);
  let got = 0;
  for (const piece of pieces) {
    for (const o of reader === undefined ? [piece] : reader.feed(piece)) {
      if (got + o.length > size)
        throw corrupt(
          'bad-object',
          file,
          offset,
          `zstd data longer than the declared ${size} bytes`,
        );
      if (into !== undefined) into.set(o, got);
      else sink(o);
      got += o.length;
    }
  }
  if ((reader !== undefined && !reader.ended()) || got !== size)
    throw corrupt(
      'bad-object',
      file,
      offset,
      `zstd data of ${got} bytes, not the declared ${size}`,
    );
}
