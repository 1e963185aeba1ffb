import { once } from 'node:events';
import { setImmediate as turn } from 'node:timers/promises';
import type { Hash } from 'node:crypto';
import { Transform, Writable } from 'node:stream';
import { constants, createDeflate, crc32 } from 'node:zlib';
import { Inflater, inflateStream } from '../codec/zlib.js';
import { GitError, codecDiagnostic, corrupt } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { objectHeaderBytes } from '../hash/hash-object.js';
import { NO_DICT, kindOf } from '../codec/dict.js';
import type { ZstdCodec } from '../codec/zstd.js';
import { pipeLooseData, type LooseHeader } from '../store/loose.js';
import type { Pack } from '../store/pack.js';
import type { EntryEncoding } from './encoding.js';
import { entryEnd, typeOf, type Plan } from './plan.js';
import { isBaseType, typeName } from '../format/object-type.js';
import { FIXED_HUFFMAN } from './levels.js';

/**
 * Entries the rewrite never holds whole (issue 21): a copied entry longer than this, a loose
 * object whose file is, a whole object re-encoded from an entry that is, is read, checked and
 * written this many bytes at a time (git's write_reuse_object copies in pack windows; its
 * write_no_reuse_object streams a blob above core.bigFileThreshold). Held, they took twice their
 * size and more: a 1.5 GiB blob 3.1 GiB of memory (docs/benchmarks.md §8). The caller has
 * written the entry's new header; `append` adds each piece of its data to the pack.
 */
export const STREAM_CHUNK = 1 << 20;

/** An entry of `pack` at idx position `j`, `[off, end)`, whose header `srcHeader` is read. */
export interface SourceEntry {
  pack: Pack;
  j: number;
  off: number;
  end: number;
  srcHeader: Buffer;
}

/** Entry `s` of a plan, with the header the batch read for it. */
export function sourceEntry(plan: Plan, s: number, srcHeader: Buffer): SourceEntry {
  const pi = plan.srcPack[s]!;
  const j = plan.srcIdx[s]!;
  const pack = plan.input.packs[pi]!;
  return { pack, j, off: pack.idx.offsets[j]!, end: entryEnd(plan, pi, j), srcHeader };
}

/**
 * Whether entry `s`, to re-encode, is re-encoded a chunk at a time. Into a git pack, a whole
 * object: from a zlib pack when its entry is over a chunk, from a zstd pack when the object is
 * over `streamAbove` (its frame may be a few KiB). Into a zstd pack (`zpack`, the export), any
 * entry of a zlib pack whose data (the object, or a delta) is over a chunk: `zstdStreaming`.
 */
export function streamsReencode(
  plan: Plan,
  s: number,
  o: { zpack?: unknown; streamAbove?: number | undefined },
): boolean {
  const pi = plan.srcPack[s]!;
  const j = plan.srcIdx[s]!;
  const zsrc = plan.input.packs[pi]!.isZpack;
  if (o.zpack !== undefined) return !zsrc && plan.scans[pi]!.size[j]! > STREAM_CHUNK;
  if (!isBaseType(typeOf(plan, pi, j))) return false;
  if (!zsrc) return plan.entryLen[pi]![j]! > STREAM_CHUNK;
  return o.streamAbove !== undefined && plan.scans[pi]!.size[j]! > o.streamAbove;
}

/**
 * A copied entry: its data read, CRC'd and appended a chunk at a time (into `chunk`). Its CRC32
 * against the old idx is known only at the end: a mismatch then stops the run, and the new
 * pack, never installed, is removed.
 */
export function copyStreaming(
  e: SourceEntry,
  chunk: Buffer,
  append: (piece: Buffer) => void,
): void {
  const { pack, j, off, end, srcHeader } = e;
  let crc = crc32(srcHeader);
  for (let p = off + srcHeader.length; p < end; p += STREAM_CHUNK) {
    const piece = pack.read(
      p,
      Math.min(STREAM_CHUNK, end - p),
      chunk.subarray(0, Math.min(STREAM_CHUNK, end - p)),
    );
    crc = crc32(piece, crc);
    append(piece);
  }
  if (crc !== pack.idx.crc(j)) {
    const what = 'entry does not match its CRC32 in the index';
    throw pack.entryError(off, what, 'bad-pack');
  }
}

/**
 * Undefined, or a promise to wait for before more is appended: the output sends what is written
 * on to git, which has not read it yet (`RewriteOutput.ready`). A streamed entry waits a chunk
 * at a time, so that a large object re-encoded faster than git reads it is not held in the pipe.
 */
export type Room = () => Promise<void> | undefined;

async function waitRoom(room: Room | undefined): Promise<void> {
  await room?.();
}

/**
 * A loose object (git's write_no_reuse_object for a blob above core.bigFileThreshold): inflated,
 * hashed and deflated into the pack a chunk at a time. Its id is known to match only at the end:
 * a mismatch stops the run before anything is installed. Under `auto`, whose length rule needs
 * the deflated length first, it is deflated twice. `begin` writes the entry's header.
 */
export async function looseStreaming(
  file: string,
  h: LooseHeader,
  id: Uint8Array,
  enc: EntryEncoding,
  algo: HashAlgo,
  begin: () => void,
  append: (piece: Buffer) => void,
  room?: Room,
): Promise<void> {
  let level = enc.level;
  if (enc.maxLen !== Infinity) {
    let len = 0;
    await pipeLooseData(
      file,
      h,
      deflateStream(level),
      new Writable({ write: (c: Buffer, _e, done) => ((len += c.length), done()) }),
    );
    if (len > enc.maxLen) level = 0;
  }
  begin();
  const hash = algo.create().update(objectHeaderBytes(typeName(h.type), h.size));
  const tap = new Transform({
    transform: (c: Buffer, _e, done) => (hash.update(c), done(null, c)),
  });
  await pipeLooseData(
    file,
    h,
    tap,
    deflateStream(level),
    new Writable({
      write: (c: Buffer, _e, done) => (append(c), void waitRoom(room).then(() => done())),
    }),
  );
  const got = hash.digest();
  if (!got.equals(id))
    throw corrupt('bad-object', file, 0, `object hashes to ${toHex(got)}, expected ${toHex(id)}`);
}

/**
 * A whole object re-encoded a chunk at a time (git streams a blob above core.bigFileThreshold):
 * its entry read, CRC'd and inflated or decompressed (`zstd`: the source zstd pack's codec), the
 * bytes hashed and deflated into the pack; the stream written is inflated again as it goes. At
 * the end the CRC32 must be the old index's, and both the bytes read and the bytes the new
 * stream inflates to must hash to the object's id (the proof a held re-encode gets by comparing).
 */
export async function reencodeStreaming(
  e: SourceEntry,
  type: number,
  size: number,
  enc: EntryEncoding,
  algo: HashAlgo,
  zstd: () => ZstdCodec,
  begin: () => void,
  append: (piece: Buffer) => void,
  room?: Room,
): Promise<void> {
  const { pack, j, off } = e;
  const bad = (
    what: string,
    code: 'bad-pack' | 'bad-object' | 'verify-failed' = 'bad-object',
    cause?: unknown,
  ): GitError => pack.entryError(off, what, code, cause);
  const objectHash = (): Hash => algo.create().update(objectHeaderBytes(typeName(type), size));
  const source = (put: (piece: Buffer) => Promise<void>, tap?: Hash): Promise<void> =>
    sourceObject(e, type, false, size, zstd, bad, put, tap, false);
  let level = enc.level;
  if (enc.maxLen !== Infinity && (await deflatePieces(level, source, () => undefined)) > enc.maxLen)
    level = 0;
  begin();
  const read = objectHash();
  const back = objectHash();
  const inflate = inflateStream(STREAM_CHUNK);
  inflate.on('data', (c: Buffer) => back.update(c));
  const inflated = once(inflate, 'end');
  inflated.catch(() => undefined);
  await deflatePieces(
    level,
    (put) => source(async (piece) => (await waitRoom(room), put(piece)), read),
    (c) => {
      append(c);
      inflate.write(c);
    },
  );
  inflate.end();
  await inflated;
  const id = pack.idx.idAt(j);
  const got = read.digest();
  if (!got.equals(id)) throw bad(`object hashes to ${toHex(got)}, expected ${toHex(id)}`);
  if (!back.digest().equals(id))
    throw bad('entry re-encoded does not inflate to the same bytes', 'verify-failed');
}

/** Where a zstd pack's entry goes (the export): the output's codec, its level and the entry's dictionary. */
export interface ZstdTarget {
  codec: ZstdCodec;
  level: number;
  dict: number;
}

/**
 * An entry of a zlib pack re-encoded into a zstd pack a chunk at a time (the export; git streams
 * a blob above core.bigFileThreshold): inflated as it is read, CRC'd, hashed and compressed into
 * one zstd frame as it goes; the frame written is decompressed again as it goes. As for an entry
 * held whole, the frame is written only when shorter than the data, else the data plain (a reader
 * tells them apart by length: docs/zstd-pack-format.md), so its length is measured first
 * (`framesShorter`). At the end the CRC32 must be the old index's, and the bytes read and those
 * the frame decompresses to must hash alike: to the object's id for a whole object, to each
 * other for a delta (whose chain ends in `type`; `size` is its data's length).
 */
export async function zstdStreaming(
  e: SourceEntry,
  type: number,
  delta: boolean,
  size: number,
  out: ZstdTarget,
  algo: HashAlgo,
  begin: () => void,
  append: (piece: Buffer) => void,
): Promise<void> {
  const { pack, j, off } = e;
  const bad = (
    what: string,
    code: 'bad-pack' | 'bad-object' | 'verify-failed' = 'bad-object',
    cause?: unknown,
  ): GitError => pack.entryError(off, what, code, cause);
  const dataHash = (): Hash =>
    delta ? algo.create() : algo.create().update(objectHeaderBytes(typeName(type), size));
  // Each piece is done with before the next is read (zstd copies what it keeps): one buffer each
  // way, no garbage; and a turn for the event loop (a signal's handler, V8's collector) each chunk.
  const source = (put: (piece: Buffer) => void, tap?: Hash): Promise<void> =>
    sourceObject(
      e,
      type,
      delta,
      size,
      noZstdSource,
      bad,
      (piece) => (put(piece), turn()),
      tap,
      true,
    );
  const framed = out.level !== 0 && (await framesShorter(out, size, source));
  begin();
  const read = dataHash();
  if (!framed) {
    // Stored plain (a type at level 0, or data zstd does not make smaller): exactly as long as the data.
    await source(append, read);
  } else {
    const back = dataHash();
    const writer = out.codec.frameWriter(out.level, out.dict, STREAM_CHUNK);
    const check = out.codec.frameReader(out.dict, STREAM_CHUNK, true);
    let len = 0;
    const put = (frame: Iterable<Buffer>): void => {
      for (const f of frame) {
        len += f.length;
        append(f);
        for (const o of check.feed(f)) back.update(o);
      }
    };
    await source((piece) => put(writer.feed(piece)), read);
    put(writer.end());
    if (len >= size || !check.ended() || !back.digest().equals(read.copy().digest()))
      throw bad('entry re-encoded does not decompress to the same bytes', 'verify-failed');
  }
  const got = read.digest();
  if (!delta && !got.equals(pack.idx.idAt(j)))
    throw bad(`object hashes to ${toHex(got)}, expected ${toHex(pack.idx.idAt(j))}`);
}

/** Stops a first reading of an entry early (what it had to tell is known). */
const ENOUGH = new Error('enough read');

/**
 * Whether the frame of data of `size` bytes (given by `source`) is shorter than the data: it is
 * compressed and counted, not written. It stops as soon as the frame so far and the longest that
 * the rest can add (zstd's bound, with up to two blocks consumed but not yet out) come under
 * `size`: compressible data is read only in part (1% of it when it halves); incompressible data
 * is read to the end, and then stored plain. The same bytes give the same frame again.
 */
async function framesShorter(
  out: ZstdTarget,
  size: number,
  source: (put: (piece: Buffer) => void) => Promise<void>,
): Promise<boolean> {
  const writer = out.codec.frameWriter(out.level, out.dict, STREAM_CHUNK);
  let fed = 0;
  let len = 0;
  try {
    await source((piece) => {
      fed += piece.length;
      for (const f of writer.feed(piece)) len += f.length;
      if (len + out.codec.bound(size - fed + PENDING) < size) throw ENOUGH;
    });
  } catch (err) {
    if (err === ENOUGH) return true;
    throw err;
  }
  for (const f of writer.end()) len += f.length;
  return len < size;
}

/** Input zstd may hold without having written it out: two blocks of 128 KiB. */
const PENDING = 256 << 10;

function noZstdSource(): ZstdCodec {
  throw new GitError('unsupported', 'a zstd pack is not streamed into another');
}

/**
 * An entry's data (an object's bytes, or a delta's when `delta`, whose chain ends in `type`), a
 * piece at a time, into `put` (and `tap`), every check of its source entry made.
 */
async function sourceObject(
  e: SourceEntry,
  type: number,
  delta: boolean,
  size: number,
  zstd: () => ZstdCodec,
  bad: (what: string, code?: 'bad-pack', cause?: unknown) => GitError,
  put: (piece: Buffer) => Promise<void>,
  tap: Hash | undefined,
  reuse: boolean,
): Promise<void> {
  const { pack, j, off, end, srcHeader } = e;
  let crc = crc32(srcHeader);
  let got = 0;
  const emit = async (o: Buffer): Promise<void> => {
    got += o.length;
    if (got > size) throw bad(`inflates to more than the declared ${size} bytes`);
    tap?.update(o);
    await put(o);
  };
  let into: Buffer | undefined;
  function* reads(): Generator<Buffer> {
    for (let p = off + srcHeader.length; p < end; p += STREAM_CHUNK) {
      const n = Math.min(STREAM_CHUNK, end - p);
      const piece = pack.read(
        p,
        n,
        reuse ? (into ??= Buffer.allocUnsafe(STREAM_CHUNK)).subarray(0, n) : undefined,
      ); // else its own buffer: deflate keeps it for a while
      crc = crc32(piece, crc);
      yield piece;
    }
  }
  try {
    if (pack.isZpack) {
      // In a zstd pack, data as long as the object is the object itself (stored plain).
      const plain = end - off - srcHeader.length === size;
      const reader = plain
        ? undefined
        : zstd().frameReader(
            pack.zstdDicts.dictOfKind[kindOf(type, delta)] ?? NO_DICT,
            STREAM_CHUNK,
            reuse,
          );
      for (const piece of reads())
        for (const o of reader === undefined ? [piece] : reader.feed(piece)) await emit(o);
      if (reader !== undefined && !reader.ended()) throw bad('zstd frame ends past the entry');
    } else await inflatePieces(reads(), emit, end - off - srcHeader.length, size, !reuse);
  } catch (err) {
    if (err === ENOUGH) throw err;
    if (err instanceof GitError && err.file === undefined) throw bad(err.detail, undefined, err);
    if (!(err instanceof GitError)) {
      const codec = pack.isZpack ? 'zstd' : 'zlib';
      throw bad(`corrupt object data (${codec}: ${codecDiagnostic(err)})`, undefined, err);
    }
    throw err;
  }
  if (pack.idx.hasCrcs && crc !== pack.idx.crc(j))
    throw bad('entry does not match its CRC32 in the index', 'bad-pack');
  if (got !== size) throw bad(`inflates to ${got} bytes, not the declared ${size}`);
}

/**
 * Deflates the pieces `source` hands to its `put` (which waits while the stream is full) at
 * `level`, each piece of output to `onOut`; resolves with the stream's length.
 */
async function deflatePieces(
  level: number,
  source: (put: (piece: Buffer) => Promise<void>) => Promise<void>,
  onOut: (c: Buffer) => void,
): Promise<number> {
  const d = deflateStream(level);
  let len = 0;
  d.on('data', (c: Buffer) => {
    len += c.length;
    onOut(c);
  });
  const ended = once(d, 'end');
  ended.catch(() => undefined);
  try {
    await source(async (piece) => {
      if (!d.write(piece)) await once(d, 'drain');
    });
  } catch (e) {
    d.destroy();
    throw e;
  }
  d.end();
  await ended;
  return len;
}

/**
 * Inflates one zlib stream given in pieces into `emit` (which may wait), a chunk at a time (the
 * Inflater's, on an engine of its own: others may inflate while `emit` waits; each piece in a
 * buffer of its own when `fresh`); the stream must end exactly at the end of its `dataLen`
 * bytes, and give no more than `size` bytes.
 */
async function inflatePieces(
  pieces: Iterable<Buffer>,
  emit: (o: Buffer) => Promise<void>,
  dataLen: number,
  size: number,
  fresh: boolean,
): Promise<void> {
  const it = new Inflater().inflating(
    pieces,
    dataLen,
    Buffer.allocUnsafe(STREAM_CHUNK),
    size,
    fresh,
  );
  let r = it.next();
  for (; r.done !== true; r = it.next())
    await emit(Buffer.from(r.value.buffer, r.value.byteOffset, r.value.length));
  const { produced, consumed, error } = r.value;
  if (error !== undefined) throw new Error(error);
  if (produced > size)
    throw new GitError('bad-object', `inflates to more than the declared ${size} bytes`);
  if (consumed !== dataLen)
    throw new GitError('bad-object', `zlib stream ends after ${consumed} of ${dataLen} bytes`);
}

/** A deflate stream at a rewrite level (deflateAt's, a chunk at a time). */
function deflateStream(level: number): Transform {
  const chunkSize = STREAM_CHUNK;
  if (level === FIXED_HUFFMAN)
    return createDeflate({ level: 6, strategy: constants.Z_FIXED, chunkSize });
  return createDeflate({ level, chunkSize });
}
