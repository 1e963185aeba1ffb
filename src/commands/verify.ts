import { readFileSync } from 'node:fs';
import { GitError, codecDiagnostic } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { OBJECT_HEADER_ROOM, objectHeader, putObjectHeader } from '../hash/algo.js';
import { applyDelta, parseDeltaHeader } from '../delta/apply.js';
import { StackArena } from '../delta/arena.js';
import {
  firstUnsortedId,
  idOffsetInFile,
  idxChecksumOk,
  offsetOffsetInFile,
} from '../format/idx.js';
import { parseRev } from '../format/rev.js';
import { typeName } from '../format/object-type.js';
import { Pack, SEQUENTIAL_CHUNK } from '../store/pack.js';
import {
  BROKEN,
  EXTERNAL_PARENT,
  NO_PARENT,
  childrenOf,
  scanPack,
  type PackScan,
  type ScanProblem,
} from '../store/pack-scan.js';
import { MAX_DELTA_DEPTH } from '../store/odb.js';
import { shownPath, type FsPath } from '../store/fs-path.js';

export interface VerifyPackResult {
  pack: string;
  ok: boolean;
  objects: number;
  nonDelta: number;
  /** chainLengths[d-1] = number of deltas at depth d. */
  chainLengths: number[];
  problems: ScanProblem[];
  /** Problems past the reporting cap. */
  moreProblems: number;
}

/** git's default `core.bigFileThreshold`. */
export const DEFAULT_BIG_FILE_THRESHOLD = 512 * 1024 * 1024;

export interface VerifyOptions {
  /** Objects at least this large (or than 1 MiB, whichever is less) that are no delta's base are hashed while streaming. */
  bigFileThreshold?: number | undefined;
  /** Receives `git verify-pack -v` object lines in pack order when set. */
  verboseLine?: (line: string) => void;
  onProgress?: (phase: string, done: number, total: number) => void;
  signal?: AbortSignal;
}

const MAX_REPORTED = 50;

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

/**
 * Verifies one pack like `git verify-pack` / `git index-pack --verify`: trailer checksums of pack
 * and idx, idx order and fanout, every entry's CRC32, every object re-hashed (deltas resolved base
 * first with an explicit stack), the `.rev` when present.
 */
export async function verifyPack(
  packFile: FsPath,
  idxFile: FsPath,
  algo: HashAlgo,
  opts: VerifyOptions = {},
): Promise<VerifyPackResult> {
  const packPath = shownPath(packFile);
  const result: VerifyPackResult = {
    pack: packPath,
    ok: false,
    objects: 0,
    nonDelta: 0,
    chainLengths: [],
    problems: [],
    moreProblems: 0,
  };
  const problem = (p: ScanProblem): void => {
    if (result.problems.length < MAX_REPORTED) result.problems.push(p);
    else result.moreProblems++;
  };
  let pack: Pack;
  try {
    pack = Pack.open(packFile, algo, idxFile);
  } catch (e) {
    // A zstd pack without zstd is not damaged: fatal, as everywhere one is read.
    if (!(e instanceof GitError) || e.code === 'unsupported') throw e;
    problem({ file: e.file ?? packPath, offset: e.offset ?? 0, message: e.detail });
    return result;
  }
  try {
    await verifyOpened(pack, opts, result, problem);
  } finally {
    pack.close();
  }
  result.ok = result.problems.length === 0;
  return result;
}

async function verifyOpened(
  pack: Pack,
  opts: VerifyOptions,
  result: VerifyPackResult,
  problem: (p: ScanProblem) => void,
): Promise<void> {
  result.objects = pack.count;
  const offsetsOk = checkIndex(pack, problem);
  // The pack's own trailer.
  const sum = pack.checksumOk();
  if (!sum.ok)
    problem({
      file: pack.packPath,
      offset: pack.dataEnd,
      message: `pack checksum mismatch (trailer ${toHex(pack.idx.packChecksum)}, content hashes to ${toHex(sum.actual)})`,
    });
  if (pack.revPath !== undefined) checkRev(pack, pack.revPath, problem);
  // Entries: headers, CRCs, bases (not when the idx cannot say where they are).
  if (!offsetsOk) return;
  const n = pack.count;
  opts.onProgress?.('indexing objects', 0, n);
  let scan: PackScan;
  try {
    scan = scanPack(pack, {
      checkCrc: true,
      lean: true,
      onProblem: problem,
      onProgress: (d) => opts.onProgress?.('indexing objects', d, n),
    });
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    problem({ file: e.file ?? pack.packPath, offset: e.offset ?? 0, message: e.detail });
    return;
  }
  opts.onProgress?.('indexing objects', n, n);
  opts.signal?.throwIfAborted();
  // The CRC32s are checked: of the idx only the ids are needed from here on (20 of its 28 bytes
  // an object, and its offsets were decoded at open). The file's buffer goes before the ids are
  // read again (`releaseNow`'s closed channel frees it two turns of the event loop later, as
  // measured): 68 -> 48 MiB for 2.4 M objects.
  pack.releaseIds();
  pack.idx.releaseCrcs();
  for (let turn = 0; turn < 2; turn++) await new Promise((r) => setImmediate(r));
  const r = new BaseFirstResolver(pack, scan, opts, problem);
  await r.resolveAll();
  r.reportUnresolved();
  showPackInfo(pack, scan, r, opts, result);
}

/**
 * The idx: its own checksum, ids strictly increasing, fanout consistent with them, offsets inside
 * the data and one entry each (the entries must tile [12, trailer) exactly). Returns whether the
 * offsets can be trusted to find the entries.
 */
function checkIndex(pack: Pack, problem: (p: ScanProblem) => void): boolean {
  const { idx, algo } = pack;
  const n = pack.count;
  const len = algo.len;
  if (pack.isZpack) {
    // A zstd pack: its index is the idx's raw bytes inside it; the file has a trailer of its own.
    if (!idxChecksumOk(idx.raw, algo))
      problem({
        file: pack.packPath,
        offset: pack.dataEnd + idx.raw.length - len,
        message: 'index checksum mismatch',
      });
    if (!pack.trailerOk())
      problem({
        file: pack.packPath,
        offset: pack.size - len,
        message: 'zstd pack trailer checksum mismatch',
      });
  } else if (!idxChecksumOk(idx.raw, algo))
    problem({
      file: pack.idxPath,
      offset: idx.raw.length - len,
      message: 'index checksum mismatch',
    });
  const unsorted = firstUnsortedId(idx);
  if (unsorted >= 0)
    problem({
      file: pack.idxPath,
      offset: idOffsetInFile(idx, unsorted),
      message: `object ids out of order at index position ${unsorted}`,
    });
  for (let b = 0, i = 0; b < 256; b++) {
    while (i < n && idx.ids[i * len]! <= b) i++;
    if (idx.fanout[b] !== i) {
      problem({
        file: pack.idxPath,
        offset: (idx.version === 2 ? 8 : 0) + b * 4,
        message: `fanout entry ${b} does not match the ids`,
      });
      break;
    }
  }
  if (n === 0 && pack.dataEnd !== pack.dataStart)
    problem({
      file: pack.packPath,
      offset: pack.dataStart,
      message: `pack declares no objects but has ${pack.dataEnd - pack.dataStart} bytes of data`,
    });
  for (let i = 0; i < n; i++) {
    const off = pack.offsetAtRank(i);
    const outside = off < pack.dataStart || off >= pack.dataEnd;
    if (outside || (i > 0 && off === pack.offsetAtRank(i - 1))) {
      const j = pack.order[i]!;
      const why = outside
        ? `offset ${off} of object ${toHex(idx.ids, j * len, len)} is outside the pack data`
        : `two index entries share pack offset ${off}`;
      problem({ file: pack.idxPath, offset: offsetOffsetInFile(idx, j), message: why });
      return false;
    }
  }
  return true;
}

/** The .rev, when there is one, must describe this pack's order. */
function checkRev(pack: Pack, revPath: string, problem: (p: ScanProblem) => void): void {
  const { algo, idx } = pack;
  const n = pack.count;
  const len = algo.len;
  try {
    const buf = readFileSync(pack.files.rev ?? revPath);
    const order = parseRev(buf, n, algo, revPath);
    const want = pack.order;
    for (let i = 0; i < n; i++) {
      if (order[i] !== want[i]) {
        problem({
          file: revPath,
          offset: 12 + 4 * i,
          message: 'reverse index does not match pack order',
        });
        break;
      }
    }
    if (!idxChecksumOk(buf, algo))
      problem({
        file: revPath,
        offset: buf.length - len,
        message: 'reverse-index checksum mismatch',
      });
    if (!buf.subarray(buf.length - 2 * len, buf.length - len).equals(idx.packChecksum)) {
      problem({
        file: revPath,
        offset: buf.length - 2 * len,
        message: 'reverse index belongs to another pack',
      });
    }
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    problem({ file: e.file ?? revPath, offset: e.offset ?? 0, message: e.detail });
  }
}

/** In `realType`: a walk from a base reached the object (its own byte, not an array of its own). */
const REACHED = 0x80;

interface Frame {
  j: number;
  data: Buffer;
  next: number;
  /** The arena's top before this frame's object. */
  mark: number;
}

/**
 * Objects inflated, resolved and re-hashed base first, as git index-pack's `resolve_deltas`: from
 * each non-delta base down its children with an explicit stack. Every object lives in an arena
 * with room for its header in front, so that one digest call hashes it; a delta is inflated into
 * `deltaBuf`, which is reused.
 */
class BaseFirstResolver {
  readonly depth: Uint16Array;
  /** The type at the bottom of each object's chain once resolved; REACHED alone for a delta that failed. */
  readonly realType: Uint8Array;
  private readonly start: Int32Array;
  private readonly list: Int32Array;
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
    ({ start: this.start, list: this.list } = childrenOf(scan.parent, pack.order));
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
      if (scan.size[root]! >= streamAbove && this.start[root + 1] === this.start[root]) {
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
    const { arena, scan, start } = this;
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
    const stack: Frame[] = [{ j: root, data: rootData, next: start[root]!, mark: rootMark }];
    while (stack.length > 0) {
      const f = stack[stack.length - 1]!;
      if (f.next >= start[f.j + 1]!) {
        stack.pop();
        arena.release(f.mark);
        continue;
      }
      const c = this.list[f.next++]!;
      this.realType[c] = REACHED;
      if (stack.length > MAX_DELTA_DEPTH) {
        this.problem({
          file: this.pack.packPath,
          offset: this.pack.idx.offsets[c]!,
          message: `delta chain deeper than ${MAX_DELTA_DEPTH}`,
        });
        continue;
      }
      const child = this.applyChild(c, type, f.data);
      if (child === undefined) continue;
      this.depth[c] = stack.length;
      if ((++this.resolved & 0x3fff) === 0)
        this.opts.onProgress?.('resolving deltas', this.resolved, this.deltas);
      if (start[c + 1]! > start[c]!)
        stack.push({ j: c, data: child.data, next: start[c]!, mark: child.mark });
      else arena.release(child.mark);
    }
  }

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

/** verify-pack -v statistics and object lines (git's `show_pack_info`). */
function showPackInfo(
  pack: Pack,
  scan: PackScan,
  r: { depth: Uint16Array; realType: Uint8Array },
  opts: VerifyOptions,
  result: VerifyPackResult,
): void {
  const { idx } = pack;
  const n = pack.count;
  const len = pack.algo.len;
  const { depth, realType } = r;
  let deepest = 0;
  for (let j = 0; j < n; j++) if (depth[j]! > deepest) deepest = depth[j]!;
  const hist = new Array<number>(deepest).fill(0);
  for (let j = 0; j < n; j++) {
    if (scan.parent[j] === NO_PARENT) result.nonDelta++;
    else if (depth[j]! > 0) hist[depth[j]! - 1]!++;
  }
  result.chainLengths = hist;
  if (!opts.verboseLine) return;
  const order = pack.order;
  for (let i = 0; i < n; i++) {
    const j = order[i]!;
    const off = idx.offsets[j]!;
    const end = i + 1 < n ? idx.offsets[order[i + 1]!]! : pack.dataEnd;
    let line = `${toHex(idx.ids, j * len, len)} ${typeName(realType[j]! & ~REACHED).padEnd(6)} ${scan.size[j]} ${end - off} ${off}`;
    const p = scan.parent[j]!;
    if (p >= 0) line += ` ${depth[j]} ${toHex(idx.ids, p * len, len)}`;
    opts.verboseLine(line);
  }
}

/** The trailing lines of `git verify-pack -v` for one pack. */
export function verifySummaryLines(r: VerifyPackResult): string[] {
  const out: string[] = [];
  if (r.nonDelta) out.push(`non delta: ${r.nonDelta} object${r.nonDelta === 1 ? '' : 's'}`);
  r.chainLengths.forEach((c, i) => {
    if (c) out.push(`chain length = ${i + 1}: ${c} object${c === 1 ? '' : 's'}`);
  });
  return out;
}
