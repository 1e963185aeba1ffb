import type { HashAlgo } from '../hash/algo.js';
import { emitIdxV2, encodeIdxV2, type IdxSource, type Offsets } from '../format/idx.js';
import { encodeRev } from '../format/rev.js';
import { PackFileWriter, type Finished, type PackSink } from '../format/pack-writer.js';
import { ThreadedPackWriter } from '../format/pack-writer-threaded.js';
import { encodeZpackFooter, encodeZpackHeader, type ZpackDict } from '../format/zpack.js';
import { writeChunksSyncing } from '../store/files.js';
import { releaseNow } from '../release.js';

/**
 * Where a rewrite's entries go, one implementation per mode (a mode is an implementation, not a
 * flag): a git pack with its `.idx` and `.rev`, a zstd pack carrying its own index, or nothing at
 * all for a dry run, which only counts. The rewrite writes entries into `sink` in pack order and
 * then hands `complete` the new index.
 */
export interface RewriteOutput {
  readonly sink: PackSink;
  /** False for a dry run: no index is built, `complete` is not called. */
  readonly writes: boolean;
  /** `index` is called once the pack is complete (the writer's memory gone before the index's is made). */
  complete(index: () => NewIndex): Promise<{ written: WrittenPack; bytesOut: number }>;
  /** Undefined, or a promise to wait for before more is written (what the output sends on is not read yet). */
  ready?(): Promise<void> | undefined;
}

/** The new pack's index, by id rank, and what ties ranks to the pack's order. */
export interface NewIndex {
  count: number;
  source: IdxSource;
  /** Selection numbers in id order, and in pack order; each entry's offset and CRC32 by selection number. */
  sorted: Uint32Array;
  outOrder: Uint32Array;
  outOffset: Offsets;
  outCrc: Uint32Array;
}

export interface WrittenPack {
  packPath: string;
  idxPath: string;
  revPath: string | undefined;
  checksum: Buffer;
  count: number;
  /** Resolves once the pack file is fsynced and closed (it may still be on its way to disk). */
  durable: Promise<void>;
  /**
   * When the writing thread has read the pack back (every header parsed, every entry's CRC32
   * matched): resolves then; with each idx rank's offset and CRC32 as they were checked, for the
   * proof to hold the index on disk against.
   */
  readBack?:
    | { done: Promise<void>; offsetAt(rank: number): number; crcAt(rank: number): number }
    | undefined;
}

/** Writing a zstd pack instead of a git pack (an export: never into objects/pack). */
export interface ZpackOutput {
  level: number;
  /**
   * Object types stored plain (their data as it is, no frame: the reader tells plain data by
   * its length), e.g. commits and trees, which a walk then reads without decompressing.
   */
  plainTypes?: ReadonlySet<number> | undefined;
  dicts: ZpackDict[];
  refs: string;
  promisor: boolean;
}

/** A dry run's sink: entries are counted, not written. */
class CountingSink implements PackSink {
  offset = 12;
  writeEntry(
    _header: Buffer,
    data: Buffer,
    _slot: number,
    headerLen: number,
    start = 0,
    end = data.length,
  ): void {
    this.offset += headerLen + end - start;
  }
  appendToEntry(data: Buffer, _slot: number, start = 0, end = data.length): void {
    this.offset += end - start;
  }
  copyEntries(_data: Buffer, start: number, end: number): void {
    this.offset += end - start;
  }
  finish(): Promise<Finished> {
    return Promise.reject(new Error('a dry run writes no pack'));
  }
  abort(): Promise<void> {
    return Promise.resolve();
  }
}

export function dryRunOutput(): RewriteOutput {
  return {
    sink: new CountingSink(),
    writes: false,
    complete: () => Promise.reject(new Error('a dry run writes no pack')),
  };
}

/**
 * A git pack in temporary files: entries written by a thread of its own when `threaded` (its
 * CRC32s, hashing, writing and read-back off the main thread), the `.idx` streamed after, the
 * `.rev` when wanted.
 */
export function gitPackOutput(o: {
  tmp: { pack: string; idx: string; rev: string };
  algo: HashAlgo;
  count: number;
  writeRev: boolean;
  threaded: boolean;
  outOffset: Offsets;
  outOrder: Uint32Array;
  outCrc: Uint32Array;
}): RewriteOutput {
  const sink: PackSink = o.threaded
    ? new ThreadedPackWriter(o.tmp.pack, o.algo, o.count, {
        offsets: o.outOffset,
        order: o.outOrder,
        crcs: o.outCrc,
      })
    : new PackFileWriter(o.tmp.pack, o.algo, o.count, o.outCrc);
  return {
    sink,
    writes: true,
    async complete(makeIndex) {
      const bytesOut = sink.offset + o.algo.len;
      const { checksum, durable, readBack } = await sink.finish();
      const synced = [durable];
      try {
        const index = makeIndex();
        // Streamed: an index is 28 bytes per object (SHA-1), never held whole. The three files'
        // fsyncs run on libuv's threadpool while the proof reads the pack back; `durable` is
        // all of them, awaited before anything is renamed (jq: 35 ms off the critical path).
        synced.push(
          writeChunksSyncing(
            o.tmp.idx,
            (write) => emitIdxV2(index.source, checksum, o.algo, write),
            0o444,
          ),
        );
        let revPath: string | undefined;
        if (o.writeRev) {
          const rev = encodeRev(packOrderRanks(index), checksum, o.algo);
          synced.push(writeChunksSyncing(o.tmp.rev, (write) => write(rev), 0o444));
          revPath = o.tmp.rev;
        }
        return {
          bytesOut,
          written: {
            packPath: o.tmp.pack,
            idxPath: o.tmp.idx,
            revPath,
            checksum,
            count: index.count,
            durable: allSynced(synced),
            readBack: readBack === undefined ? undefined : readBackTables(readBack, index),
          },
        };
      } catch (e) {
        await Promise.allSettled(synced); // no file still open when the caller removes them
        throw e;
      }
    },
  };
}

/** All of the files' fsyncs, marked handled (a failed run may never await it). */
function allSynced(synced: Promise<void>[]): Promise<void> {
  const all = Promise.all(synced).then(() => undefined);
  all.catch(() => {});
  return all;
}

/** Each pack-order position's id rank (the `.rev`'s content). */
function packOrderRanks(index: NewIndex): Uint32Array {
  const n = index.count;
  const rankOf = new Uint32Array(n);
  for (let r = 0; r < n; r++) rankOf[index.sorted[r]!] = r;
  const packOrder = new Uint32Array(n);
  for (let k = 0; k < n; k++) packOrder[k] = rankOf[index.outOrder[k]!]!;
  releaseNow(rankOf);
  return packOrder;
}

/**
 * What the proof holds the new index against: the offsets and CRC32s written, by index rank.
 * A small function of its own: a closure made inside a large one would keep that one's whole
 * scope alive (V8 gives all closures of a function one context) through the proof.
 */
function readBackTables(
  done: Promise<void>,
  index: NewIndex,
): NonNullable<WrittenPack['readBack']> {
  const { outOffset, outCrc, sorted } = index;
  return { done, offsetAt: (r) => outOffset[sorted[r]!]!, crcAt: (r) => outCrc[sorted[r]!]! };
}

/** A zstd pack (docs/zstd-pack-format.md): header, entries, its own index, a footer, the trailer. */
export function zpackOutput(o: {
  path: string;
  algo: HashAlgo;
  count: number;
  zout: ZpackOutput;
  outCrc: Uint32Array;
}): RewriteOutput {
  const header = encodeZpackHeader({
    count: o.count,
    algo: o.algo,
    promisor: o.zout.promisor,
    level: o.zout.level,
    dicts: o.zout.dicts,
    refs: o.zout.refs,
  });
  const writer = new PackFileWriter(o.path, o.algo, o.count, o.outCrc, header);
  return {
    sink: writer,
    writes: true,
    complete(makeIndex) {
      const index = makeIndex();
      // The index's pack checksum is the hash of everything before it.
      const indexStart = writer.offset;
      const checksum = writer.checksumSoFar();
      writer.appendRaw(encodeIdxV2(index.source, checksum, o.algo));
      writer.appendRaw(encodeZpackFooter(indexStart));
      const trailer = writer.finishSync();
      return Promise.resolve({
        bytesOut: writer.offset,
        written: {
          packPath: o.path,
          idxPath: o.path,
          revPath: undefined,
          checksum: trailer,
          count: index.count,
          durable: Promise.resolve(),
        },
      });
    },
  };
}
