import { isDelta } from '../format/object-type.js';
import { NO_DICT, kindOf } from '../codec/dict.js';
import {
  COPY_CRC,
  COPY_INFLATE,
  COPY_STREAM,
  REENCODE_STREAM,
  emptyJob,
  REENCODE,
  SKIP,
  type BatchJob,
  type BatchResult,
} from './batch.js';
import type { BatchPool } from './pool.js';
import { entryEnd, headerLenOf, isDirect, typeOf, type Plan } from './plan.js';
import { STREAM_CHUNK, streamsReencode } from './streamed.js';
import type { Decision } from './classify.js';
import type { RewriteOptions } from './options.js';
import type { Pack } from '../store/pack.js';
import type { Direct } from './rewrite-write.js';

/*
 * The read side of a partition's rewrite (rewrite.ts): batches of consecutive output entries,
 * each entry's mode and level decided, its source bytes read as spans, handed to the pool.
 */

/** A batch holds at most this many entries or (unless one entry is larger) this many source bytes. */
export const BATCH_MAX = 4096;
// 256 KiB batches and one in flight per thread beyond the two being written: on git.git as fast
// as 512 KiB, 1 MiB (and as 4 MiB and four per thread), and lighter: a batch of commits and trees
// stored grows 3-4 times in its output buffer (256 KiB against 512: -2.6 MiB peak, 4.40 s
// against 4.31 s, git repack -a -d 4.52 s; 4 interleaved runs, docs/decisions.md).
export const BATCH_BYTES = 256 << 10;
// Input and output buffers kept for the next batches (each way): two, as a batch is built while
// the next result is awaited; a buffer more is garbage (1.6 MiB less peak on git.git than keeping
// every one handed back).
export const SPARE_BUFFERS = 2;
/**
 * An entry larger than a batch makes a batch of its own size: beyond two batches in flight, no
 * more than this many source bytes, so that a pack of 48 MiB blobs holds about two of them at
 * a time, not one per stage of the pipeline (normal batches never come near it).
 */
export const INFLIGHT_BYTES = 16 << 20;

/** What the read side shares with the rewrite (rewrite.ts's PartitionRewrite). */
export interface BatchFeeding {
  readonly plan: Plan;
  readonly opts: RewriteOptions;
  /** Copies are counted, not read (a dry run, or a trial of the entries that may be kept). */
  readonly counting: boolean;
  readonly outType: Uint8Array;
  readonly outDictOfKind: number[];
  readonly zsrc: Pack | undefined;
  readonly usesAuto: boolean;
  /** The next entry to batch, batches in flight, buffers going round. */
  next: number;
  readonly inflight: InFlight[];
  readonly freeIn: ArrayBuffer[];
  readonly spareOut: ArrayBuffer[];
  decide(s: number): Decision;
  direct(s: number): Direct;
}

/** A batch on its way: the job's tables the main thread needs back to write its entries. */
export interface InFlight {
  promise: Promise<BatchResult>;
  from: number;
  to: number;
  directs: Map<number, Direct>;
  modes: Uint8Array;
  rawStart: Uint32Array;
  headerLen: Uint8Array;
  rawLen: Uint32Array;
  crc: Uint32Array;
  /** Source bytes read for it. */
  bytes: number;
}

export function inflightBytes(f: BatchFeeding): number {
  let bytes = 0;
  for (const b of f.inflight) bytes += b.bytes;
  return bytes;
}

function takeBuffer(f: BatchFeeding, bytes: number): ArrayBuffer {
  const i = f.freeIn.findIndex((b) => b.byteLength >= bytes);
  if (i >= 0) return f.freeIn.splice(i, 1)[0]!;
  return new ArrayBuffer(Math.max(bytes, BATCH_BYTES));
}

/** The next batch: up to BATCH_MAX entries or BATCH_BYTES of source bytes, handed to the pool. */
export function buildBatch(f: BatchFeeding, pool: BatchPool): InFlight {
  const { plan } = f;
  const from = f.next;
  let bytes = 0;
  let to = from;
  while (to < plan.n && to - from < BATCH_MAX) {
    const s = plan.outOrder[to]!;
    if (!isDirect(plan, s)) {
      const l = plan.entryLen[plan.srcPack[s]!]![plan.srcIdx[s]!]!;
      if (bytes > 0 && bytes + l > BATCH_BYTES) break;
      bytes += l;
    }
    to++;
  }
  const job = newJob(f, to - from);
  const { directs, read } = fillJob(f, job, from);
  job.buf = takeBuffer(f, read); // sized by what is read: a streamed entry's header only
  f.next = to;
  const copy = {
    modes: job.mode.slice(),
    rawStart: job.rawStart.slice(),
    headerLen: job.headerLen.slice(),
    rawLen: job.rawLen.slice(),
    crc: job.crc.slice(),
  };
  return { promise: pool.run(job), from, to, directs, bytes: read, ...copy };
}

function newJob(f: BatchFeeding, m: number): BatchJob {
  const { plan, opts } = f;
  const zstdOut = opts.zpack !== undefined;
  const files = plan.input.packs.map((p) => ({ path: p.packPath, fd: p.descriptor }));
  return emptyJob(m, NO_BUFFER, f.spareOut.pop(), {
    hashLen: plan.len,
    files,
    zstdIn: f.zsrc !== undefined,
    zstdOut,
    maxLen: f.usesAuto && !zstdOut,
  });
}

/** Each entry's mode, level and source bytes (read by the thread as spans of consecutive bytes). */
function fillJob(
  f: BatchFeeding,
  job: BatchJob,
  from: number,
): { directs: Map<number, Direct>; read: number } {
  const { plan, opts } = f;
  const zout = opts.zpack;
  const directs = new Map<number, Direct>();
  const spans: number[] = [];
  let pos = 0;
  for (let i = 0; i < job.n; i++) {
    const s = plan.outOrder[from + i]!;
    if (isDirect(plan, s)) {
      directs.set(i, f.direct(s));
      continue;
    }
    const pi = plan.srcPack[s]!;
    const pack = plan.input.packs[pi]!;
    const j = plan.srcIdx[s]!;
    const off = pack.idx.offsets[j]!;
    const end = entryEnd(plan, pi, j);
    const { level, copy, maxLen } = f.decide(s);
    job.rawLen[i] = end - off;
    job.headerLen[i] = headerLenOf(plan, pi, j);
    if (copy && f.counting) {
      job.mode[i] = SKIP; // counted, not read
      continue;
    }
    const hasCrc = pack.idx.hasCrcs;
    const reStreamed = !copy && streamsReencode(plan, s, opts);
    const streamed = reStreamed || (copy && hasCrc && end - off > STREAM_CHUNK); // (an idx v1 copy: inflated whole)
    job.mode[i] = reStreamed
      ? REENCODE_STREAM
      : streamed
        ? COPY_STREAM
        : copy
          ? hasCrc
            ? COPY_CRC
            : COPY_INFLATE
          : REENCODE;
    // In a zstd pack, level 0 stands for plain (a type in plainTypes).
    job.level[i] =
      zout === undefined ? level : zout.plainTypes?.has(f.outType[s]!) === true ? 0 : zout.level;
    if (job.maxLen !== undefined) job.maxLen[i] = maxLen;
    if (pack.isZpack)
      job.srcDict![i] =
        pack.zstdDicts.dictOfKind[kindOf(f.outType[s]!, isDelta(typeOf(plan, pi, j)))] ?? NO_DICT;
    if (zout !== undefined)
      job.dstDict![i] = f.outDictOfKind[kindOf(f.outType[s]!, plan.base[s]! >= 0)] ?? NO_DICT;
    job.crc[i] = hasCrc ? pack.idx.crc(j) : 0;
    job.rawStart[i] = pos;
    job.fileIndex[i] = pi;
    job.offset[i] = off;
    // Consecutive source bytes of one pack make one span: (file, start, length, position).
    const len = streamed ? job.headerLen[i]! : end - off;
    const last = spans.length - 4;
    if (last >= 0 && spans[last] === pi && spans[last + 1]! + spans[last + 2]! === off)
      spans[last + 2]! += len;
    else spans.push(pi, off, len, pos);
    pos += len;
  }
  job.spans = Float64Array.from(spans);
  return { directs, read: pos };
}

const NO_BUFFER = new ArrayBuffer(0);
