import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { GitError, corrupt } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import type { Offsets } from '../format/idx.js';
import { checkObjectId, isDelta } from '../format/object-type.js';
import { MAX_ENTRY_HEADER } from '../format/pack.js';
import { readLooseFile, readLooseHeader, loosePath, type LooseHeader } from '../store/loose.js';
import { ensureFreeSpace } from '../store/free-space.js';
import type { ObjectDatabase } from '../store/odb.js';
import type { Pack } from '../store/pack.js';
import { releaseNow } from '../release.js';
import { DICT_KINDS, NO_DICT, kindOf } from '../codec/dict.js';
import { zstdCodec, type ZstdCodec } from '../codec/zstd.js';
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
import { deflateAt } from './deflate.js';
import { BatchPool } from './pool.js';
import type { Levels } from './levels.js';
import { DEFAULT_AUTO_RULE, directEncoding, type AutoRule, type Targets } from './encoding.js';
import {
  entryEnd,
  headerLenOf,
  isDirect,
  newIndex,
  planPartition,
  typeOf,
  type PartitionInput,
  type Plan,
} from './plan.js';
import { countType, type RewriteStats } from './stats.js';
import { outputBound, outputEstimate } from './output-size.js';
import {
  STREAM_CHUNK,
  copyStreaming,
  looseStreaming,
  reencodeStreaming,
  sourceEntry,
  streamsReencode,
  zstdStreaming,
  type Room,
} from './streamed.js';
import { sameAsSource } from './unchanged.js';
import {
  dryRunOutput,
  gitPackOutput,
  zpackOutput,
  type RewriteOutput,
  type WrittenPack,
  type ZpackOutput,
} from './sink.js';
import { withChangedCheck } from './changed-pack.js';
import { EntryClassifier, type Decision } from './classify.js';
import { CopyRun, writtenHeader } from './copy-run.js';
import type { RewriteOptions, RewriteResult } from './options.js';
import { proveCopies as proveCopiesOf, type CopyProof } from './duplicates.js';

export type { PartitionInput } from './plan.js';
export type { WrittenPack, ZpackOutput } from './sink.js';
export type { RewriteStats, TypeCounts } from './stats.js';
export type { RewriteOptions, RewriteResult } from './options.js';
export { MAX_HELD_ENTRY } from './output-size.js';

/** A batch holds at most this many entries or (unless one entry is larger) this many source bytes. */
const BATCH_MAX = 4096;
// 256 KiB batches and one in flight per thread beyond the two being written: on git.git as fast
// as 512 KiB, 1 MiB (and as 4 MiB and four per thread), and lighter: a batch of commits and trees
// stored grows 3-4 times in its output buffer (256 KiB against 512: -2.6 MiB peak, 4.40 s
// against 4.31 s, git repack -a -d 4.52 s; 4 interleaved runs, docs/decisions.md).
const BATCH_BYTES = 256 << 10;
// Input and output buffers kept for the next batches (each way): two, as a batch is built while
// the next result is awaited; a buffer more is garbage (1.6 MiB less peak on git.git than keeping
// every one handed back).
const SPARE_BUFFERS = 2;
/**
 * An entry larger than a batch makes a batch of its own size: beyond two batches in flight, no
 * more than this many source bytes, so that a pack of 48 MiB blobs holds about two of them at
 * a time, not one per stage of the pipeline (normal batches never come near it).
 */
const INFLIGHT_BYTES = 16 << 20;
/** With worker threads and no git reading alongside, this thread re-encodes every third batch itself (pool.ts). */
const INLINE_EVERY = 3;

/**
 * An object not copied from a pack entry (loose, or a delta written whole), encoded; or, without
 * `data`, a large loose object, streamed from its file when its turn comes to be written.
 */
type Direct =
  | { type: number; size: number; data: Buffer }
  | { type: number; size: number; data?: undefined; file: string; header: LooseHeader };

/** A batch on its way: the job's tables the main thread needs back to write its entries. */
interface InFlight {
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

/**
 * Rewrites one partition (all its packs and loose objects) into one new pack in temporary files:
 * every delta kept, only entries whose encoding differs from the target re-encoded, bases placed
 * before their deltas, OFS_DELTA distances recomputed. Every entry is checked on the way through
 * (CRC32 against the old idx for copies, inflate-compare for re-encodes, re-hash for objects
 * resolved whole and loose objects). A plan (plan.ts), an encoding rule (encoding.ts), an
 * output (sink.ts): this file only moves entries from the one to the other.
 */
export async function rewritePartition(
  input: PartitionInput,
  opts: RewriteOptions,
): Promise<RewriteResult> {
  // What can be refused is refused before any pack is scanned.
  if (opts.zpack !== undefined && opts.dryRun)
    throw new GitError('usage', 'a dry run cannot predict zstd sizes');
  if (input.packs.filter((p) => p.isZpack).length > 1)
    throw new GitError('unsupported', 'only one zstd pack can be read per rewrite');
  // An id held twice: the copy kept is hashed first (duplicates.ts).
  const proveCopies = (copies: number[]): Promise<CopyProof[]> =>
    proveCopiesOf(
      input.packs,
      input.looseDir,
      input.loose,
      copies,
      opts.odb,
      opts.algo,
      opts.hashWholePack,
    );
  const plan = await planPartition(input, {
    algo: opts.algo,
    excluded: opts.excluded,
    dryRun: opts.dryRun,
    onProgress: opts.onProgress,
    proveCopies,
    proveExcluded: opts.proveExcluded,
  });
  return new PartitionRewrite(plan, opts).run();
}

class PartitionRewrite {
  private readonly targets: Targets;
  private stats: RewriteStats;
  /** Copies are counted, not read (a dry run, or a trial of the entries that may be kept). */
  private counting: boolean;
  private readonly outType: Uint8Array;
  private readonly outOffset: Offsets;
  private readonly outCrc: Uint32Array;
  private readonly hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  private readonly copies = new CopyRun(BATCH_MAX);
  private readonly classifier: EntryClassifier;
  /** Slots git's check is sent (non-zero): never part of a run of copies (an entry whose type was unknown when they were chosen may yet be copied). */
  private sent: Uint8Array | undefined;
  /** Dictionary of each kind in the output (zstd), and the one zstd source pack. */
  private readonly outDictOfKind: number[];
  private readonly zsrc: Pack | undefined;
  private mainZstd: ZstdCodec | undefined;
  /** The source zstd pack's codec, for objects decompressed a chunk at a time. */
  private srcZstd: ZstdCodec | undefined;
  private readonly usesAuto: boolean;
  // The write loop's state: the next entry to batch, batches in flight, buffers going round.
  private next = 0;
  private readonly inflight: InFlight[] = [];
  private readonly freeIn: ArrayBuffer[] = [];
  private readonly spareOut: ArrayBuffer[] = [];
  /** The output's wait for room (what it sends on to git), for entries streamed a chunk at a time. */
  private room: Room | undefined;
  /** Where entries too long to hold are read, a chunk at a time. */
  private chunk: Buffer | undefined;

  constructor(
    private readonly plan: Plan,
    private readonly opts: RewriteOptions,
  ) {
    const { n } = plan;
    this.targets = {
      levels: opts.levels,
      rule: opts.autoRule ?? DEFAULT_AUTO_RULE,
      fallback: opts.autoFallback ?? -1,
      zstd: opts.zpack !== undefined,
    };
    this.usesAuto = Object.values(opts.levels).includes('auto');
    this.stats = this.freshStats();
    this.counting = opts.dryRun;
    // 32-bit offsets (4 bytes per object less) when the pack cannot reach 4 GiB whatever each
    // entry becomes; loose objects, deltas written whole (sizes not known yet) and zstd output
    // always get 64-bit ones.
    const small =
      opts.zpack === undefined && plan.input.loose.length === 0 && outputBound(plan) < 0x100000000;
    this.outOffset = small
      ? new Uint32Array(new SharedArrayBuffer(4 * n))
      : new Float64Array(new SharedArrayBuffer(8 * n));
    this.outCrc = new Uint32Array(new SharedArrayBuffer(4 * n));
    this.outType = new Uint8Array(n);
    this.classifier = new EntryClassifier(plan, this.targets, this.outType, this.usesAuto);
    const zout = opts.zpack;
    this.outDictOfKind = DICT_KINDS.map((_, k) =>
      zout === undefined ? NO_DICT : zout.dicts.findIndex((d) => d.kind === k),
    );
    this.zsrc = plan.input.packs.find((p) => p.isZpack);
  }

  private freshStats(): RewriteStats {
    const { plan } = this;
    const stats = {
      objects: plan.n,
      copied: 0,
      reencoded: { commit: 0, tree: 0, blob: 0, tag: 0 },
      whole: 0,
      loose: 0,
      duplicatesDropped: plan.duplicatesDropped,
      excluded: plan.excluded,
      bytesIn: 0,
      bytesOut: 0,
    };
    for (const p of plan.input.packs) stats.bytesIn += p.size;
    return stats;
  }

  async run(): Promise<RewriteResult> {
    const { plan, opts } = this;
    const same =
      opts.skipIfUnchanged === true &&
      !opts.dryRun &&
      opts.zpack === undefined &&
      sameAsSource(plan, (k) => this.classify(k));
    if (same === 'if-kept' ? await this.allKept() : same) {
      this.stats = this.freshStats();
      this.stats.copied = plan.n;
      this.stats.bytesOut = plan.input.packs[0]!.size;
      return { stats: this.stats, written: undefined, unchanged: true };
    }
    const { stats } = this;
    // Room for the new pack beside the old one, asked before a byte of it is written; which entries get new bytes.
    const changed =
      opts.changedCheck !== undefined && !opts.dryRun && opts.zpack === undefined
        ? new Uint8Array(plan.n)
        : undefined;
    this.sent = changed;
    // (A zstd pack goes elsewhere (-o): only what it would hold whole over the bound is refused.)
    const estimate = opts.dryRun
      ? 0
      : outputEstimate(
          plan,
          (k) => this.classify(k),
          this.outType,
          opts.maxHeldEntry,
          (k) => streamsReencode(plan, k, opts),
          changed,
        );
    if (!opts.dryRun && opts.zpack === undefined)
      ensureFreeSpace(dirname(opts.tmp.pack), estimate, 'the new pack');
    // While writing, each entry's size comes from its header as the re-encoding thread reads it:
    // the scan's sizes (4 bytes per object) are needed no longer, unless `auto` chooses by size
    // or a dry run counts copies it does not read, or a zstd pack streams by size.
    if (
      !opts.dryRun &&
      !this.usesAuto &&
      opts.streamAbove === undefined &&
      opts.zpack === undefined
    )
      for (const sc of plan.scans) releaseNow(sc.size);
    // A dry run goes the same way with nothing written: its size is the pack's, to the byte.
    const pool = new BatchPool(
      BatchPool.threadsFor(plan.n, opts.threads),
      changed === undefined ? INLINE_EVERY : 0,
    );
    let output: RewriteOutput;
    try {
      output = this.openOutput(pool.threads > 0, changed);
    } catch (e) {
      await pool.close();
      throw e;
    }
    try {
      await this.writeEntries(pool, output);
      await pool.close(); // its threads' memory goes before the ids come back
      stats.bytesOut = output.sink.offset + plan.len;
      this.releaseWriteTables();
      if (!output.writes) return { stats, written: undefined };
      const { outOffset, outCrc } = this;
      const { written, bytesOut } = await output.complete(() => newIndex(plan, outOffset, outCrc));
      stats.bytesOut = bytesOut;
      releaseNow(plan.srcPack, plan.srcIdx);
      return { stats, written };
    } catch (e) {
      await output.sink.abort();
      throw e;
    } finally {
      await pool.close();
    }
  }

  /**
   * The trial of a pack whose every entry is copied but some that may be kept (a stored entry
   * under `auto`, say): those are re-encoded, nothing is written, and when every one is kept
   * the source pack is the result. Otherwise the real run starts over.
   */
  private async allKept(): Promise<boolean> {
    const pool = new BatchPool(BatchPool.threadsFor(this.plan.n, this.opts.threads));
    this.counting = true;
    try {
      await this.writeEntries(pool, dryRunOutput());
    } finally {
      await pool.close();
      this.counting = this.opts.dryRun;
      this.next = 0;
    }
    const r = this.stats.reencoded;
    const kept = r.commit + r.tree + r.blob + r.tag === 0;
    this.stats = this.freshStats();
    return kept;
  }

  /** Where the entries go; those `changed` marks also to git, as they are written (changed-pack.ts). */
  private openOutput(threads: boolean, changed: Uint8Array | undefined): RewriteOutput {
    const { opts, plan } = this;
    if (opts.dryRun) return dryRunOutput();
    if (opts.zpack !== undefined)
      return zpackOutput({
        path: opts.tmp.pack,
        algo: opts.algo,
        count: plan.n,
        zout: opts.zpack,
        outCrc: this.outCrc,
      });
    const pack = (): RewriteOutput =>
      gitPackOutput({
        tmp: opts.tmp,
        algo: opts.algo,
        count: plan.n,
        writeRev: opts.writeRev,
        threaded: threads,
        outOffset: this.outOffset,
        outOrder: plan.outOrder,
        outCrc: this.outCrc,
      });
    return changed?.includes(1) === true
      ? withChangedCheck(pack, changed, opts.algo, opts.changedCheck!)
      : pack();
  }

  private classify(s: number): Decision {
    return this.classifier.classify(s);
  }

  /** The same, counted in the stats. */
  private decide(s: number): Decision {
    const d = this.classify(s);
    if (d.copy) this.stats.copied++;
    else countType(this.stats.reencoded, d.type, 1);
    return d;
  }

  /** Writes entry `s` (git's write_object): a new header, then `data[start, end)`. */
  private emit(
    sink: RewriteOutput['sink'],
    s: number,
    type: number,
    size: number,
    baseSel: number,
    data: Buffer,
    start: number,
    end: number,
  ): void {
    this.copies.flush(sink);
    const offset = sink.offset;
    const hl = writtenHeader(
      this.hdr,
      type,
      size,
      offset,
      baseSel >= 0 ? this.outOffset[baseSel]! : -1,
    );
    this.outOffset[s] = offset;
    sink.writeEntry(this.hdr, data, s, hl, start, end);
  }

  /** An object not copied from a pack entry (git's write_no_reuse_object): a loose object, or a delta written whole. */
  private direct(s: number): Direct {
    const { plan, opts, stats } = this;
    const pi = plan.srcPack[s]!;
    const j = plan.srcIdx[s]!;
    let obj: { type: number; data: Buffer };
    if (pi === plan.looseMark) {
      const id = plan.input.loose[j]!;
      const file = loosePath(plan.input.looseDir, id);
      if (opts.zpack === undefined && statSync(file).size > STREAM_CHUNK) {
        const header = readLooseHeader(file);
        this.outType[s] = header.type;
        return { type: header.type, size: header.size, file, header };
      }
      obj = readLooseFile(file);
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
    this.outType[s] = obj.type;
    const zout = opts.zpack;
    let data: Buffer;
    if (zout !== undefined) {
      this.mainZstd ??= zstdCodec(zout.dicts.map((d) => d.data));
      const dict = this.outDictOfKind[kindOf(obj.type, false)] ?? NO_DICT;
      const frame =
        zout.plainTypes?.has(obj.type) === true
          ? obj.data
          : this.mainZstd.compress(obj.data, zout.level, dict);
      data = frame.length < obj.data.length ? frame : obj.data;
    } else {
      const enc = directEncoding(this.targets, obj.type, obj.data.length);
      data = deflateAt(obj.data, enc.level);
      if (data.length > enc.maxLen) data = deflateAt(obj.data, 0);
    }
    return { type: obj.type, size: obj.data.length, data };
  }

  /**
   * Batches of consecutive output entries: their source bytes are read in as few spans as
   * possible, checked and re-encoded on worker threads (or inline), then written in order.
   */
  private async writeEntries(pool: BatchPool, output: RewriteOutput): Promise<void> {
    const { plan, opts } = this;
    if (this.zsrc !== undefined || opts.zpack !== undefined)
      pool.setDicts(
        this.zsrc?.zstdDicts.dicts,
        opts.zpack?.dicts.map((d) => d.data),
      );
    const pipelineDepth = Math.max(2, pool.threads + 2);
    this.room = output.ready?.bind(output);
    while (this.next < plan.n || this.inflight.length > 0) {
      while (
        this.inflight.length < pipelineDepth &&
        this.next < plan.n &&
        (this.inflight.length < 2 || this.inflightBytes() < INFLIGHT_BYTES)
      )
        this.inflight.push(this.buildBatch(pool));
      const b = this.inflight.shift()!;
      const r = await b.promise;
      if (r.error) {
        const e = r.error;
        const code = e.code === 'verify-failed' ? 'verify-failed' : 'bad-pack';
        // (the batch's message names no place)
        throw (
          plan.input.packs
            .find((p) => p.packPath === e.file)
            ?.corruptObject(e.offset, e.message, code) ?? corrupt(code, e.file, e.offset, e.message)
        );
      }
      await this.writeBatch(output.sink, b, r);
      await output.ready?.();
      if (r.buf.byteLength <= 2 * BATCH_BYTES && this.freeIn.length < SPARE_BUFFERS)
        this.freeIn.push(r.buf);
      // A large one (an entry re-encoded whole) goes now, not at V8's next full collection.
      else releaseNow(new Uint8Array(r.buf));
      if (
        r.out !== r.buf &&
        r.out.byteLength > 0 &&
        r.out.byteLength <= 4 * BATCH_BYTES &&
        this.spareOut.length < SPARE_BUFFERS
      )
        this.spareOut.push(r.out);
      else if (r.out !== r.buf) releaseNow(new Uint8Array(r.out));
      opts.onProgress?.('writing objects', b.to, plan.n);
      opts.signal?.throwIfAborted();
    }
    opts.onProgress?.('writing objects', plan.n, plan.n);
  }

  /** A batch's entries, in pack order (git's write_one): the direct ones, copies and re-encodes. */
  private async writeBatch(
    sink: RewriteOutput['sink'],
    b: InFlight,
    r: BatchResult,
  ): Promise<void> {
    const { plan, stats } = this;
    const src = Buffer.from(r.buf);
    const out = Buffer.from(r.out);
    for (let i = 0; i < b.to - b.from; i++) {
      const s = plan.outOrder[b.from + i]!;
      const type = this.outType[s]!;
      const d = b.directs.get(i);
      const mode = b.modes[i]!;
      if (d?.data !== undefined) this.emit(sink, s, d.type, d.size, -1, d.data, 0, d.data.length);
      else if (d !== undefined) await this.looseStreaming(sink, s, d.file, d.header);
      else if (mode === COPY_STREAM || mode === REENCODE_STREAM)
        await this.streamEntry(
          sink,
          s,
          mode,
          type,
          r.size[i]!,
          src.subarray(b.rawStart[i]!, b.rawStart[i]! + b.headerLen[i]!),
        );
      else if (mode === SKIP)
        this.emit(
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
        this.emit(
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
        const at = sink.offset + this.copies.pending;
        if (
          mode === COPY_CRC &&
          (this.sent === undefined || this.sent[s] === 0) &&
          CopyRun.unchanged(
            this.hdr,
            src,
            rs,
            b.headerLen[i]!,
            type,
            r.size[i]!,
            at,
            base >= 0 ? this.outOffset[base]! : -1,
          )
        ) {
          this.outOffset[s] = at;
          this.copies.add(sink, src, rs, rs + b.rawLen[i]!, s, b.crc[i]!);
        } else
          this.emit(sink, s, type, r.size[i]!, base, src, rs + b.headerLen[i]!, rs + b.rawLen[i]!);
      }
    }
    this.copies.flush(sink);
  }

  /** An entry too long to hold, copied (git's write_reuse_object) or re-encoded a chunk at a time: streamed.ts. */
  private async streamEntry(
    sink: RewriteOutput['sink'],
    s: number,
    mode: number,
    type: number,
    size: number,
    srcHeader: Buffer,
  ): Promise<void> {
    const e = sourceEntry(this.plan, s, srcHeader);
    const append = (c: Buffer): void => sink.appendToEntry(c, s);
    const begin = (): void => this.emit(sink, s, type, size, this.plan.base[s]!, EMPTY, 0, 0);
    if (mode === COPY_STREAM) begin();
    if (mode === COPY_STREAM)
      return copyStreaming(e, (this.chunk ??= Buffer.allocUnsafe(STREAM_CHUNK)), append);
    const zout = this.opts.zpack;
    if (zout !== undefined) {
      const delta = this.plan.base[s]! >= 0;
      const level = zout.plainTypes?.has(type) === true ? 0 : zout.level; // (0: stored plain, as a batch does)
      const codec = (this.mainZstd ??= zstdCodec(zout.dicts.map((d) => d.data)));
      return zstdStreaming(
        e,
        type,
        delta,
        size,
        { codec, level, dict: this.outDictOfKind[kindOf(type, delta)] ?? NO_DICT },
        this.opts.algo,
        begin,
        append,
      );
    }
    const zstd = (): ZstdCodec => (this.srcZstd ??= zstdCodec(e.pack.zstdDicts.dicts));
    await reencodeStreaming(
      e,
      type,
      size,
      { ...this.classify(s) },
      this.opts.algo,
      zstd,
      begin,
      append,
      this.room,
    );
  }

  /** A large loose object (git's write_no_reuse_object above core.bigFileThreshold): streamed.ts. */
  private async looseStreaming(
    sink: RewriteOutput['sink'],
    s: number,
    file: string,
    h: LooseHeader,
  ): Promise<void> {
    const id = this.plan.input.loose[this.plan.srcIdx[s]!]!;
    const begin = (): void => this.emit(sink, s, h.type, h.size, -1, EMPTY, 0, 0);
    await looseStreaming(
      file,
      h,
      id,
      directEncoding(this.targets, h.type, h.size),
      this.opts.algo,
      begin,
      (c) => sink.appendToEntry(c, s),
      this.room,
    );
    this.stats.loose++;
  }

  private inflightBytes(): number {
    let bytes = 0;
    for (const f of this.inflight) bytes += f.bytes;
    return bytes;
  }

  private takeBuffer(bytes: number): ArrayBuffer {
    const i = this.freeIn.findIndex((b) => b.byteLength >= bytes);
    if (i >= 0) return this.freeIn.splice(i, 1)[0]!;
    return new ArrayBuffer(Math.max(bytes, BATCH_BYTES));
  }

  /** The next batch: up to BATCH_MAX entries or BATCH_BYTES of source bytes, handed to the pool. */
  private buildBatch(pool: BatchPool): InFlight {
    const { plan } = this;
    const from = this.next;
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
    const job = this.newJob(to - from);
    const { directs, read } = this.fillJob(job, from);
    job.buf = this.takeBuffer(read); // sized by what is read: a streamed entry's header only
    this.next = to;
    const copy = {
      modes: job.mode.slice(),
      rawStart: job.rawStart.slice(),
      headerLen: job.headerLen.slice(),
      rawLen: job.rawLen.slice(),
      crc: job.crc.slice(),
    };
    return { promise: pool.run(job), from, to, directs, bytes: read, ...copy };
  }

  private newJob(m: number): BatchJob {
    const { plan, opts } = this;
    const zstdOut = opts.zpack !== undefined;
    const files = plan.input.packs.map((p) => ({ path: p.packPath, fd: p.descriptor }));
    return emptyJob(m, NO_BUFFER, this.spareOut.pop(), {
      hashLen: plan.len,
      files,
      zstdIn: this.zsrc !== undefined,
      zstdOut,
      maxLen: this.usesAuto && !zstdOut,
    });
  }

  /** Each entry's mode, level and source bytes (read by the thread as spans of consecutive bytes). */
  private fillJob(job: BatchJob, from: number): { directs: Map<number, Direct>; read: number } {
    const { plan, opts } = this;
    const zout = opts.zpack;
    const directs = new Map<number, Direct>();
    const spans: number[] = [];
    let pos = 0;
    for (let i = 0; i < job.n; i++) {
      const s = plan.outOrder[from + i]!;
      if (isDirect(plan, s)) {
        directs.set(i, this.direct(s));
        continue;
      }
      const pi = plan.srcPack[s]!;
      const pack = plan.input.packs[pi]!;
      const j = plan.srcIdx[s]!;
      const off = pack.idx.offsets[j]!;
      const end = entryEnd(plan, pi, j);
      const { level, copy, maxLen } = this.decide(s);
      job.rawLen[i] = end - off;
      job.headerLen[i] = headerLenOf(plan, pi, j);
      if (copy && this.counting) {
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
        zout === undefined
          ? level
          : zout.plainTypes?.has(this.outType[s]!) === true
            ? 0
            : zout.level;
      if (job.maxLen !== undefined) job.maxLen[i] = maxLen;
      if (pack.isZpack)
        job.srcDict![i] =
          pack.zstdDicts.dictOfKind[kindOf(this.outType[s]!, isDelta(typeOf(plan, pi, j)))] ??
          NO_DICT;
      if (zout !== undefined)
        job.dstDict![i] =
          this.outDictOfKind[kindOf(this.outType[s]!, plan.base[s]! >= 0)] ?? NO_DICT;
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

  /** What only the writing needed goes before the index is built (about 20 bytes per object). */
  private releaseWriteTables(): void {
    const { plan } = this;
    for (const scan of plan.scans) releaseNow(scan.size);
    releaseNow(...plan.info);
    releaseNow(plan.base, this.outType, ...plan.entryLen);
    for (const p of plan.input.packs) p.idx.releaseCrcs();
    plan.scans.length = 0;
    this.freeIn.length = 0;
    this.spareOut.length = 0;
  }
}

const EMPTY = Buffer.alloc(0);
const NO_BUFFER = new ArrayBuffer(0);
