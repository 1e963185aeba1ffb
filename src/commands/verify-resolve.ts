import { GitError, codecDiagnostic } from '../errors.js';
import { toHex } from '../hash/algo.js';
import { OBJECT_HEADER_ROOM, objectHeader, putObjectHeader } from '../hash/algo.js';
import { applyDelta, parseDeltaHeader } from '../delta/apply.js';
import { StackArena } from '../delta/arena.js';
import { typeName } from '../format/object-type.js';
import { Pack, SEQUENTIAL_CHUNK } from '../store/pack.js';
import {
  BROKEN,
  EXTERNAL_PARENT,
  NO_PARENT,
  type PackScan,
  type ScanProblem,
} from '../store/pack-scan.js';
import { DeltaTree, chainTooDeep } from '../store/chain.js';
import type { VerifyOptions } from './verify.js';

/** git's default `core.bigFileThreshold`. */
export const DEFAULT_BIG_FILE_THRESHOLD = 512 * 1024 * 1024;

/** The resolution stack's memory: the objects of the chain being resolved, one frame each. */
const ARENA_BYTES = 16 << 20;
/**
 * Objects at least this large that are no delta's base are hashed while they stream out of zlib,
 * whatever core.bigFileThreshold says: held whole, a pack of 48 MiB blobs took verify to 290 MiB
 * (issue 20). Entries larger than this are read a chunk at a time, never whole.
 */
const STREAM_ABOVE = SEQUENTIAL_CHUNK;
/** Room for an object's header in front of it. */
const H = OBJECT_HEADER_ROOM;

/** In `realType`: a walk from a base reached the object (its own byte, not an array of its own). */
export const REACHED = 0x80;

/** An object of the chain being resolved: its data in the arena, and the arena's top before it. */
interface Frame {
  data: Buffer;
  mark: number;
}

/**
 * Objects inflated, resolved and re-hashed base first, as git index-pack's `resolve_deltas`: from
 * each non-delta base down its children with an explicit stack. Every object lives in an arena
 * with room for its header in front, so that one digest call hashes it; a delta is inflated into
 * `deltaBuf`, which is reused.
 */
export class BaseFirstResolver {
  readonly depth: Uint16Array;
  /** The type at the bottom of each object's chain once resolved; REACHED alone for a delta that failed. */
  readonly realType: Uint8Array;
  private readonly tree: DeltaTree;
  private readonly arena = new StackArena(ARENA_BYTES);
  private deltaBuf = Buffer.allocUnsafeSlow(1 << 16);
  private readonly deltas: number;
  private resolved = 0;

  constructor(
    private readonly pack: Pack,
    private readonly scan: PackScan,
    private readonly opts: VerifyOptions,
    private readonly problem: (p: ScanProblem) => void,
  ) {
    const n = pack.count;
    this.depth = new Uint16Array(n);
    this.realType = new Uint8Array(n);
    this.tree = new DeltaTree(scan, pack.order);
    let deltas = 0;
    for (let j = 0; j < n; j++) if (scan.parent[j] !== NO_PARENT) deltas++;
    this.deltas = deltas;
  }

  async resolveAll(): Promise<void> {
    const { pack, scan } = this;
    const streamAbove = Math.min(
      this.opts.bigFileThreshold ?? DEFAULT_BIG_FILE_THRESHOLD,
      STREAM_ABOVE,
    );
    for (let i = 0; i < pack.count; i++) {
      const root = pack.order[i]!;
      if (scan.parent[root] !== NO_PARENT) continue;
      this.realType[root] = scan.type[root]!;
      // A big object nothing is a delta of: hashed while it streams out of zlib (git does the
      // same above core.bigFileThreshold), so memory does not grow with its size.
      if (scan.size[root]! >= streamAbove && !this.tree.hasDeltas(root)) {
        this.hashStreaming(root);
        // A turn for the event loop (a signal's handler) between big objects, as when this was async.
        await new Promise((r) => setImmediate(r));
      } else this.resolveFrom(root);
    }
    if (this.deltas > 0) this.opts.onProgress?.('resolving deltas', this.deltas, this.deltas);
  }

  private idMismatch(j: number, id: Buffer): void {
    const { idx, algo } = this.pack;
    const len = algo.len;
    if (id.compare(idx.ids, j * len, (j + 1) * len) !== 0) {
      const named = toHex(idx.ids, j * len, len);
      this.problem({
        file: this.pack.packPath,
        offset: idx.offsets[j]!,
        message: `object hashes to ${toHex(id)} but the index names it ${named}`,
        objectId: named,
        hashesTo: toHex(id),
      });
    }
  }

  private hashStreaming(root: number): void {
    const { pack, scan } = this;
    const h = pack.algo.create();
    h.update(objectHeader(typeName(scan.type[root]!), scan.size[root]!));
    try {
      pack.inflateChunked(pack.idx.offsets[root]!, pack.end(root), (bytes) => h.update(bytes));
      this.idMismatch(root, h.digest());
    } catch (e) {
      if (!(e instanceof GitError)) throw e;
      this.problem({
        file: pack.packPath,
        offset: e.offset ?? pack.idx.offsets[root]!,
        message: e.detail,
      });
    }
  }

  private checkId(j: number, type: number, block: Buffer, size: number): void {
    const from = putObjectHeader(block, H, typeName(type), size);
    this.idMismatch(j, this.pack.algo.digest(block.subarray(from, H + size)));
  }

  /** Entry `j`'s data in `into` (room for its size + 1 bytes); a big entry of a git pack is read a chunk at a time. */
  private load(j: number, realType: number, into: Buffer): Buffer | undefined {
    const { pack } = this;
    try {
      const off = pack.idx.offsets[j]!;
      const end = pack.end(j);
      if (end - off > STREAM_ABOVE)
        return pack.inflateChunked(off, end, () => undefined, into, realType);
      return pack.inflate(pack.entry(j), realType, into);
    } catch (e) {
      if (!(e instanceof GitError)) throw e;
      this.problem({
        file: pack.packPath,
        offset: e.offset ?? pack.idx.offsets[j]!,
        message: e.detail,
      });
      return undefined;
    }
  }

  /** The base `root` and every delta below it. */
  private resolveFrom(root: number): void {
    const { arena, scan } = this;
    const type = scan.type[root]!;
    const rootSize = scan.size[root]!;
    const rootMark = arena.top;
    const rootBlock = arena.alloc(H + rootSize + 1);
    let rootData = this.load(root, type, rootBlock.subarray(H));
    if (rootData === undefined) {
      arena.release(rootMark);
      return;
    }
    // A zstd pack may hand back its own bytes (an entry stored plain): into the arena with them.
    if (rootData.buffer !== rootBlock.buffer || rootData.byteOffset !== rootBlock.byteOffset + H) {
      rootBlock.set(rootData, H);
      rootData = rootBlock.subarray(H, H + rootSize);
    }
    this.checkId(root, type, rootBlock, rootSize);
    this.opts.signal?.throwIfAborted();
    this.type = type;
    this.tree.descend(
      root,
      { data: rootData, mark: rootMark },
      this.enter,
      this.leave,
      this.tooDeep,
    );
  }

  /** The type of the tree being resolved. */
  private type = 0;

  private readonly enter = (c: number, parent: Frame, depth: number): Frame | undefined => {
    this.realType[c] = REACHED;
    const child = this.applyChild(c, this.type, parent.data);
    if (child === undefined) return undefined;
    this.depth[c] = depth;
    if ((++this.resolved & 0x3fff) === 0)
      this.opts.onProgress?.('resolving deltas', this.resolved, this.deltas);
    return child;
  };

  private readonly leave = (f: Frame): void => this.arena.release(f.mark);

  private readonly tooDeep = (c: number): void => {
    this.realType[c] = REACHED;
    const e = chainTooDeep(this.pack.packPath, this.pack.idx.offsets[c]!);
    this.problem({ file: this.pack.packPath, offset: e.offset!, message: e.detail });
  };

  /** Delta `c` applied to its base's data in the arena, and hashed; undefined (reported) when it cannot be. */
  private applyChild(
    c: number,
    type: number,
    base: Buffer,
  ): { data: Buffer; mark: number } | undefined {
    const size = this.scan.size[c]!;
    if (this.deltaBuf.length <= size) this.deltaBuf = Buffer.allocUnsafeSlow(size + 1);
    const delta = this.load(c, type, this.deltaBuf);
    if (delta === undefined) return undefined;
    const mark = this.arena.top;
    let block: Buffer;
    let data: Buffer;
    try {
      block = this.arena.alloc(H + parseDeltaHeader(delta).dstSize);
      data = applyDelta(base, delta, Number.MAX_SAFE_INTEGER, block.subarray(H));
    } catch (e) {
      this.arena.release(mark);
      this.problem({
        file: this.pack.packPath,
        offset: this.pack.idx.offsets[c]!,
        message: codecDiagnostic(e),
      });
      return undefined;
    }
    this.realType[c] = type;
    this.checkId(c, type, block, data.length);
    return { data, mark };
  }

  /** Entries no walk from a base reached: an external base (a thin pack), a broken chain, a cycle. */
  reportUnresolved(): void {
    const { pack, scan } = this;
    for (let j = 0; j < pack.count; j++) {
      if (this.realType[j] !== 0) continue;
      const p = scan.parent[j]!;
      if (p === BROKEN) continue; // already reported by the scan
      const why =
        p === EXTERNAL_PARENT
          ? `delta base ${toHex(scan.externalBase.get(j)!)} is not in this pack`
          : 'delta never resolved (its base chain is broken or forms a cycle)';
      this.problem({ file: pack.packPath, offset: pack.idx.offsets[j]!, message: why });
    }
  }
}
