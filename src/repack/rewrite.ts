import { dirname } from 'node:path';
import { GitError, corrupt } from '../errors.js';
import type { Offsets } from '../format/idx.js';
import { MAX_ENTRY_HEADER } from '../format/pack.js';
import { ensureFreeSpace } from '../store/free-space.js';
import type { Pack } from '../store/pack.js';
import { releaseNow } from '../release.js';
import { DICT_KINDS, NO_DICT } from '../codec/dict.js';
import { type ZstdCodec } from '../codec/zstd.js';
import { BatchPool } from './pool.js';
import { DEFAULT_AUTO_RULE, type Targets } from './encoding.js';
import { newIndex, planPartition, type PartitionInput, type Plan } from './plan.js';
import { countType, type RewriteStats } from './stats.js';
import { outputBound, outputEstimate } from './output-size.js';
import { streamsReencode, type Room } from './streamed.js';
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
import { CopyRun } from './copy-run.js';
import type { RewriteOptions, RewriteResult } from './options.js';
import { proveCopies as proveCopiesOf, type CopyProof } from './duplicates.js';
import {
  BATCH_BYTES,
  BATCH_MAX,
  INFLIGHT_BYTES,
  SPARE_BUFFERS,
  buildBatch,
  inflightBytes,
  type BatchFeeding,
  type InFlight,
} from './rewrite-batches.js';
import { directObject, writeBatch, type Direct, type EntryWriting } from './rewrite-write.js';

export type { PartitionInput } from './plan.js';
export type { WrittenPack, ZpackOutput } from './sink.js';
export type { RewriteStats, TypeCounts } from './stats.js';
export type { RewriteOptions, RewriteResult } from './options.js';
export { MAX_HELD_ENTRY } from './output-size.js';

/** With worker threads and no git reading alongside, this thread re-encodes every third batch itself (pool.ts). */
const INLINE_EVERY = 3;

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

class PartitionRewrite implements EntryWriting, BatchFeeding {
  readonly targets: Targets;
  stats: RewriteStats;
  /** Copies are counted, not read (a dry run, or a trial of the entries that may be kept). */
  counting: boolean;
  readonly outType: Uint8Array;
  readonly outOffset: Offsets;
  private readonly outCrc: Uint32Array;
  readonly hdr = Buffer.allocUnsafe(MAX_ENTRY_HEADER);
  readonly copies = new CopyRun(BATCH_MAX);
  private readonly classifier: EntryClassifier;
  /** Slots git's check is sent (non-zero): never part of a run of copies (an entry whose type was unknown when they were chosen may yet be copied). */
  sent: Uint8Array | undefined;
  /** Dictionary of each kind in the output (zstd), and the one zstd source pack. */
  readonly outDictOfKind: number[];
  readonly zsrc: Pack | undefined;
  mainZstd: ZstdCodec | undefined;
  /** The source zstd pack's codec, for objects decompressed a chunk at a time. */
  srcZstd: ZstdCodec | undefined;
  readonly usesAuto: boolean;
  // The write loop's state: the next entry to batch, batches in flight, buffers going round.
  next = 0;
  readonly inflight: InFlight[] = [];
  readonly freeIn: ArrayBuffer[] = [];
  readonly spareOut: ArrayBuffer[] = [];
  /** The output's wait for room (what it sends on to git), for entries streamed a chunk at a time. */
  room: Room | undefined;
  /** Where entries too long to hold are read, a chunk at a time. */
  chunk: Buffer | undefined;

  constructor(
    readonly plan: Plan,
    readonly opts: RewriteOptions,
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

  classify(s: number): Decision {
    return this.classifier.classify(s);
  }

  /** An object not copied from a pack entry (rewrite-write.ts). */
  direct(s: number): Direct {
    return directObject(this, s);
  }

  /** The same, counted in the stats. */
  decide(s: number): Decision {
    const d = this.classify(s);
    if (d.copy) this.stats.copied++;
    else countType(this.stats.reencoded, d.type, 1);
    return d;
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
        (this.inflight.length < 2 || inflightBytes(this) < INFLIGHT_BYTES)
      )
        this.inflight.push(buildBatch(this, pool));
      const b = this.inflight.shift()!;
      const r = await b.promise;
      if (r.error) {
        const e = r.error;
        const code = e.code === 'verify-failed' ? 'verify-failed' : 'bad-pack';
        // (the batch's message names no place)
        const pack = plan.input.packs.find((p) => p.packPath === e.file);
        throw (
          pack?.entryError(e.offset, e.message, code) ?? corrupt(code, e.file, e.offset, e.message)
        );
      }
      await writeBatch(this, output.sink, b, r);
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
