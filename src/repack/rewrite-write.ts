import type { Offsets } from '../format/idx.js';
import { checkObjectId } from '../format/object-type.js';
import { loosePath, readLooseOrHeader, type LooseHeader } from '../store/loose.js';
import { NO_DICT, kindOf } from '../codec/dict.js';
import { zstdCodec, type ZstdCodec } from '../codec/zstd.js';
import {
  COPY_CRC,
  COPY_STREAM,
  REENCODE_STREAM,
  REENCODE,
  SKIP,
  type BatchResult,
} from './batch.js';
import { deflateAt } from './deflate.js';
import { directEncoding, type Targets } from './encoding.js';
import type { Plan } from './plan.js';
import { countType, type RewriteStats } from './stats.js';
import {
  STREAM_CHUNK,
  copyStreaming,
  looseStreaming,
  reencodeStreaming,
  sourceEntry,
  zstdStreaming,
  type Room,
} from './streamed.js';
import type { RewriteOutput } from './sink.js';
import type { Decision } from './classify.js';
import { CopyRun, writtenHeader } from './copy-run.js';
import type { RewriteOptions } from './options.js';
import type { InFlight } from './rewrite-batches.js';

/*
 * The write side of a partition's rewrite (rewrite.ts), as git's pack-objects writes: a batch's
 * entries in order (write_one), each one's header and data (write_object), copied
 * (write_reuse_object) or encoded anew (write_no_reuse_object), held or streamed.
 */

/** What the write side shares with the rewrite (rewrite.ts's PartitionRewrite). */
export interface EntryWriting {
  readonly plan: Plan;
  readonly opts: RewriteOptions;
  readonly stats: RewriteStats;
  readonly targets: Targets;
  readonly outType: Uint8Array;
  readonly outOffset: Offsets;
  readonly hdr: Buffer;
  readonly copies: CopyRun;
  /** Slots git's check is sent (non-zero): never part of a run of copies. */
  readonly sent: Uint8Array | undefined;
  readonly outDictOfKind: number[];
  mainZstd: ZstdCodec | undefined;
  srcZstd: ZstdCodec | undefined;
  readonly room: Room | undefined;
  chunk: Buffer | undefined;
  classify(s: number): Decision;
}

/**
 * An object not copied from a pack entry (loose, or a delta written whole), encoded; or, without
 * `data`, a large loose object, streamed from its file when its turn comes to be written.
 */
export type Direct =
  | { type: number; size: number; data: Buffer }
  | { type: number; size: number; data?: undefined; file: string; header: LooseHeader };

/** Writes entry `s` (git's write_object): a new header, then `data[start, end)`. */
export function emitEntry(
  w: EntryWriting,
  sink: RewriteOutput['sink'],
  s: number,
  type: number,
  size: number,
  baseSel: number,
  data: Buffer,
  start: number,
  end: number,
): void {
  w.copies.flush(sink);
  const offset = sink.offset;
  const hl = writtenHeader(w.hdr, type, size, offset, baseSel >= 0 ? w.outOffset[baseSel]! : -1);
  w.outOffset[s] = offset;
  sink.writeEntry(w.hdr, data, s, hl, start, end);
}

/** An object not copied from a pack entry (git's write_no_reuse_object): a loose object, or a delta written whole. */
export function directObject(w: EntryWriting, s: number): Direct {
  const { plan, opts, stats } = w;
  const pi = plan.srcPack[s]!;
  const j = plan.srcIdx[s]!;
  let obj: { type: number; data: Buffer };
  if (pi === plan.looseMark) {
    const id = plan.input.loose[j]!;
    const file = loosePath(plan.input.looseDir, id);
    // (one open and read of the file: its header alone when it is to be streamed)
    const got = readLooseOrHeader(file, opts.zpack === undefined ? STREAM_CHUNK : Infinity);
    if ('header' in got) {
      const { header } = got;
      w.outType[s] = header.type;
      return { type: header.type, size: header.size, file, header };
    }
    obj = got.object;
    checkObjectId(opts.algo, obj.type, obj.data, id, 0, file, 0);
    stats.loose++;
  } else {
    // The base is not in the output (kept elsewhere, or a cycle was broken here).
    const pack = plan.input.packs[pi]!;
    obj = opts.odb.readPacked(pack, pack.idx.offsets[j]!);
    checkObjectId(
      opts.algo,
      obj.type,
      obj.data,
      pack.idx.ids,
      j * plan.len,
      pack.packPath,
      pack.idx.offsets[j]!,
    );
    stats.whole++;
  }
  w.outType[s] = obj.type;
  const zout = opts.zpack;
  let data: Buffer;
  if (zout !== undefined) {
    w.mainZstd ??= zstdCodec(zout.dicts.map((d) => d.data));
    const dict = w.outDictOfKind[kindOf(obj.type, false)] ?? NO_DICT;
    const frame =
      zout.plainTypes?.has(obj.type) === true
        ? obj.data
        : w.mainZstd.compress(obj.data, zout.level, dict);
    data = frame.length < obj.data.length ? frame : obj.data;
  } else {
    const enc = directEncoding(w.targets, obj.type, obj.data.length);
    data = deflateAt(obj.data, enc.level);
    if (data.length > enc.maxLen) data = deflateAt(obj.data, 0);
  }
  return { type: obj.type, size: obj.data.length, data };
}

/** A batch's entries, in pack order (git's write_one): the direct ones, copies and re-encodes. */
export async function writeBatch(
  w: EntryWriting,
  sink: RewriteOutput['sink'],
  b: InFlight,
  r: BatchResult,
): Promise<void> {
  const { plan, stats } = w;
  const src = Buffer.from(r.buf);
  const out = Buffer.from(r.out);
  for (let i = 0; i < b.to - b.from; i++) {
    const s = plan.outOrder[b.from + i]!;
    const type = w.outType[s]!;
    const d = b.directs.get(i);
    const mode = b.modes[i]!;
    if (d?.data !== undefined) emitEntry(w, sink, s, d.type, d.size, -1, d.data, 0, d.data.length);
    else if (d !== undefined) await looseStreamingEntry(w, sink, s, d.file, d.header);
    else if (mode === COPY_STREAM || mode === REENCODE_STREAM)
      await streamEntry(
        w,

        sink,
        s,
        mode,
        type,
        r.size[i]!,
        src.subarray(b.rawStart[i]!, b.rawStart[i]! + b.headerLen[i]!),
      );
    else if (mode === SKIP)
      emitEntry(
        w,
        sink,
        s,
        type,
        plan.scans[plan.srcPack[s]!]!.size[plan.srcIdx[s]!]!,
        plan.base[s]!,
        EMPTY,
        0,
        b.rawLen[i]! - b.headerLen[i]!,
      );
    else if (mode === REENCODE && r.kept[i] !== 1)
      emitEntry(
        w,
        sink,
        s,
        type,
        r.size[i]!,
        plan.base[s]!,
        out,
        r.outStart[i]!,
        r.outStart[i]! + r.outLen[i]!,
      );
    else {
      if (mode === REENCODE) {
        // The re-encoding gave the encoding the entry already had: its old stream stays.
        stats.copied++;
        countType(stats.reencoded, type, -1);
      }
      const rs = b.rawStart[i]!;
      const base = plan.base[s]!;
      const at = sink.offset + w.copies.pending;
      if (
        mode === COPY_CRC &&
        (w.sent === undefined || w.sent[s] === 0) &&
        CopyRun.unchanged(
          w.hdr,
          src,
          rs,
          b.headerLen[i]!,
          type,
          r.size[i]!,
          at,
          base >= 0 ? w.outOffset[base]! : -1,
        )
      ) {
        w.outOffset[s] = at;
        w.copies.add(sink, src, rs, rs + b.rawLen[i]!, s, b.crc[i]!);
      } else
        emitEntry(w, sink, s, type, r.size[i]!, base, src, rs + b.headerLen[i]!, rs + b.rawLen[i]!);
    }
  }
  w.copies.flush(sink);
}

/** An entry too long to hold, copied (git's write_reuse_object) or re-encoded a chunk at a time: streamed.ts. */
async function streamEntry(
  w: EntryWriting,
  sink: RewriteOutput['sink'],
  s: number,
  mode: number,
  type: number,
  size: number,
  srcHeader: Buffer,
): Promise<void> {
  const e = sourceEntry(w.plan, s, srcHeader);
  const append = (c: Buffer): void => sink.appendToEntry(c, s);
  const begin = (): void => emitEntry(w, sink, s, type, size, w.plan.base[s]!, EMPTY, 0, 0);
  if (mode === COPY_STREAM) begin();
  if (mode === COPY_STREAM)
    return copyStreaming(e, (w.chunk ??= Buffer.allocUnsafe(STREAM_CHUNK)), append);
  const zout = w.opts.zpack;
  if (zout !== undefined) {
    const delta = w.plan.base[s]! >= 0;
    const level = zout.plainTypes?.has(type) === true ? 0 : zout.level; // (0: stored plain, as a batch does)
    const codec = (w.mainZstd ??= zstdCodec(zout.dicts.map((d) => d.data)));
    return zstdStreaming(
      e,
      type,
      delta,
      size,
      { codec, level, dict: w.outDictOfKind[kindOf(type, delta)] ?? NO_DICT },
      w.opts.algo,
      begin,
      append,
    );
  }
  const zstd = (): ZstdCodec => (w.srcZstd ??= zstdCodec(e.pack.zstdDicts.dicts));
  await reencodeStreaming(
    e,
    type,
    size,
    { ...w.classify(s) },
    w.opts.algo,
    zstd,
    begin,
    append,
    w.room,
  );
}

/** A large loose object (git's write_no_reuse_object above core.bigFileThreshold): streamed.ts. */
async function looseStreamingEntry(
  w: EntryWriting,
  sink: RewriteOutput['sink'],
  s: number,
  file: string,
  h: LooseHeader,
): Promise<void> {
  const id = w.plan.input.loose[w.plan.srcIdx[s]!]!;
  const begin = (): void => emitEntry(w, sink, s, h.type, h.size, -1, EMPTY, 0, 0);
  await looseStreaming(
    file,
    h,
    id,
    directEncoding(w.targets, h.type, h.size),
    w.opts.algo,
    begin,
    (c) => sink.appendToEntry(c, s),
    w.room,
  );
  w.stats.loose++;
}

const EMPTY = Buffer.alloc(0);
