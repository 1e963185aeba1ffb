import { readFileSync } from 'node:fs';
import { GitError } from '../errors.js';
import { toHex, type HashAlgo } from '../hash/algo.js';
import { OBJECT_HEADER_ROOM, objectHeader, putObjectHeader } from '../hash/algo.js';
import { applyDelta, parseDeltaHeader } from '../delta/apply.js';
import { StackArena } from '../delta/arena.js';
import { firstUnsortedId, idOffsetInFile, idxChecksumOk, offsetOffsetInFile } from '../format/idx.js';
import { parseRev } from '../format/rev.js';
import { typeName } from '../format/object-type.js';
import { Pack } from '../store/pack.js';
import { inflateEntryStreaming } from '../store/stream-inflate.js';
import { BROKEN, EXTERNAL_PARENT, NO_PARENT, childrenOf, scanPack, type PackScan, type ScanProblem } from '../store/pack-scan.js';
import { MAX_DELTA_DEPTH } from '../store/odb.js';

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
  /** Objects at least this large that are no delta's base are hashed while streaming. */
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
 * Verifies one pack like `git verify-pack` / `git index-pack --verify`: trailer checksums of pack
 * and idx, idx order and fanout, every entry's CRC32, every object re-hashed (deltas resolved base
 * first with an explicit stack), the `.rev` when present.
 */
export async function verifyPack(packPath: string, idxPath: string, algo: HashAlgo, opts: VerifyOptions = {}): Promise<VerifyPackResult> {
  const result: VerifyPackResult = { pack: packPath, ok: false, objects: 0, nonDelta: 0, chainLengths: [], problems: [], moreProblems: 0 };
  const problem = (p: ScanProblem): void => {
    if (result.problems.length < MAX_REPORTED) result.problems.push(p);
    else result.moreProblems++;
  };
  let pack: Pack;
  try {
    pack = Pack.open(packPath, algo, idxPath);
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    problem({ file: e.file ?? packPath, offset: e.offset ?? 0, message: stripWhere(e) });
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

function stripWhere(e: GitError): string {
  let m = e.message;
  if (e.file !== undefined && m.startsWith(`${e.file}: `)) m = m.slice(e.file.length + 2);
  return m.replace(/ at offset \d+$/, '');
}

async function verifyOpened(pack: Pack, opts: VerifyOptions, result: VerifyPackResult, problem: (p: ScanProblem) => void): Promise<void> {
  const { idx, algo } = pack;
  const n = pack.count;
  result.objects = n;
  const len = algo.len;

  // The idx: its own checksum, ids strictly increasing, fanout consistent with them.
  if (pack.isZpack) {
    // A zstd pack: its index is the idx's raw bytes inside it; the file has a trailer of its own.
    if (!idxChecksumOk(idx.raw, algo)) problem({ file: pack.packPath, offset: pack.dataEnd + idx.raw.length - len, message: 'index checksum mismatch' });
    if (!pack.trailerOk()) problem({ file: pack.packPath, offset: pack.size - len, message: 'zstd pack trailer checksum mismatch' });
  } else {
    const idxBuf = idx.raw;
    if (!idxChecksumOk(idxBuf, algo)) problem({ file: pack.idxPath, offset: idxBuf.length - len, message: 'index checksum mismatch' });
  }
  const unsorted = firstUnsortedId(idx);
  if (unsorted >= 0) problem({ file: pack.idxPath, offset: idOffsetInFile(idx, unsorted), message: `object ids out of order at index position ${unsorted}` });
  for (let b = 0, i = 0; b < 256; b++) {
    while (i < n && idx.ids[i * len]! <= b) i++;
    if (idx.fanout[b] !== i) {
      problem({ file: pack.idxPath, offset: (idx.version === 2 ? 8 : 0) + b * 4, message: `fanout entry ${b} does not match the ids` });
      break;
    }
  }
  // Offsets: inside the data, one entry each; the entries must tile [12, trailer) exactly.
  let offsetsOk = true;
  for (let i = 0; i < n; i++) {
    const off = pack.offsetAtRank(i);
    if (off < pack.dataStart || off >= pack.dataEnd || (i > 0 && off === pack.offsetAtRank(i - 1))) {
      const j = pack.order[i]!;
      const why = off < pack.dataStart || off >= pack.dataEnd ? `offset ${off} of object ${toHex(idx.ids, j * len, len)} is outside the pack data` : `two index entries share pack offset ${off}`;
      problem({ file: pack.idxPath, offset: offsetOffsetInFile(idx, j), message: why });
      offsetsOk = false;
      break;
    }
  }
  if (n === 0 && pack.dataEnd !== pack.dataStart) problem({ file: pack.packPath, offset: pack.dataStart, message: `pack declares no objects but has ${pack.dataEnd - pack.dataStart} bytes of data` });

  // The pack's own trailer.
  const sum = pack.checksumOk();
  if (!sum.ok) problem({ file: pack.packPath, offset: pack.dataEnd, message: `pack checksum mismatch (trailer ${toHex(idx.packChecksum)}, content hashes to ${toHex(sum.actual)})` });

  // The .rev, when there is one, must describe this pack's order.
  if (pack.revPath !== undefined) {
    const revPath = pack.revPath;
    try {
      const buf = readFileSync(revPath);
      const order = parseRev(buf, n, algo, revPath);
      const want = pack.order;
      for (let i = 0; i < n; i++) {
        if (order[i] !== want[i]) {
          problem({ file: revPath, offset: 12 + 4 * i, message: 'reverse index does not match pack order' });
          break;
        }
      }
      if (!idxChecksumOk(buf, algo)) problem({ file: revPath, offset: buf.length - len, message: 'reverse-index checksum mismatch' });
      if (!buf.subarray(buf.length - 2 * len, buf.length - len).equals(idx.packChecksum)) {
        problem({ file: revPath, offset: buf.length - 2 * len, message: 'reverse index belongs to another pack' });
      }
    } catch (e) {
      if (!(e instanceof GitError)) throw e;
      problem({ file: e.file ?? revPath, offset: e.offset ?? 0, message: stripWhere(e) });
    }
  }

  // Entries: headers, CRCs, bases (not when the idx cannot say where they are).
  if (!offsetsOk) return;
  opts.onProgress?.('indexing objects', 0, n);
  let scan: PackScan;
  try {
    scan = scanPack(pack, { checkCrc: true, onProblem: problem, onProgress: (d) => opts.onProgress?.('indexing objects', d, n) });
  } catch (e) {
    if (!(e instanceof GitError)) throw e;
    problem({ file: e.file ?? pack.packPath, offset: e.offset ?? 0, message: stripWhere(e) });
    return;
  }
  opts.onProgress?.('indexing objects', n, n);
  opts.signal?.throwIfAborted();

  // Objects: inflate, resolve and re-hash, base first.
  const depth = new Uint16Array(n);
  const realType = new Uint8Array(n);
  const done = new Uint8Array(n);
  const { start, list } = childrenOf(scan.parent, pack.order);
  const order = pack.order;
  let deltas = 0;
  for (let j = 0; j < n; j++) if (scan.parent[j] !== NO_PARENT) deltas++;
  let resolved = 0;
  // Every object lives in the arena with room for its header in front, so that one digest call
  // hashes it; a delta is inflated into `deltaBuf`, which is reused.
  const arena = new StackArena(ARENA_BYTES);
  let deltaBuf = Buffer.allocUnsafeSlow(1 << 16);
  const H = OBJECT_HEADER_ROOM;
  const checkId = (j: number, type: number, block: Buffer, size: number): void => {
    const from = putObjectHeader(block, H, typeName(type), size);
    const id = algo.digest(block.subarray(from, H + size));
    if (id.compare(idx.ids, j * len, (j + 1) * len) !== 0) {
      problem({ file: pack.packPath, offset: idx.offsets[j]!, message: `object hashes to ${toHex(id)} but the index names it ${toHex(idx.ids, j * len, len)}` });
    }
  };
  const load = (j: number, realType: number, into: Buffer): Buffer | undefined => {
    try {
      return pack.inflate(pack.entry(j), realType, into);
    } catch (e) {
      if (!(e instanceof GitError)) throw e;
      problem({ file: pack.packPath, offset: e.offset ?? idx.offsets[j]!, message: stripWhere(e) });
      return undefined;
    }
  };
  interface Frame {
    j: number;
    data: Buffer;
    next: number;
    /** The arena's top before this frame's object. */
    mark: number;
  }
  const bigFile = opts.bigFileThreshold ?? DEFAULT_BIG_FILE_THRESHOLD;
  for (let i = 0; i < n; i++) {
    const root = order[i]!;
    if (scan.parent[root] !== NO_PARENT) continue;
    if (!pack.isZpack && scan.size[root]! >= bigFile && start[root + 1] === start[root]) {
      // A big object nothing is a delta of: hashed while it streams out of zlib (git does the
      // same above core.bigFileThreshold), so memory does not grow with its size.
      done[root] = 1;
      realType[root] = scan.type[root]!;
      const h = algo.create();
      h.update(objectHeader(typeName(scan.type[root]!), scan.size[root]!));
      const off = idx.offsets[root]!;
      try {
        await inflateEntryStreaming(pack, off + scan.headerLen[root]!, pack.end(root), scan.size[root]!, h);
        const id = h.digest();
        if (id.compare(idx.ids, root * len, (root + 1) * len) !== 0) {
          problem({ file: pack.packPath, offset: off, message: `object hashes to ${toHex(id)} but the index names it ${toHex(idx.ids, root * len, len)}` });
        }
      } catch (e) {
        if (!(e instanceof GitError)) throw e;
        problem({ file: pack.packPath, offset: e.offset ?? off, message: stripWhere(e) });
      }
      continue;
    }
    const type = scan.type[root]!;
    const rootSize = scan.size[root]!;
    const rootMark = arena.top;
    const rootBlock = arena.alloc(H + rootSize + 1);
    let rootData = load(root, type, rootBlock.subarray(H));
    done[root] = 1;
    if (rootData === undefined) {
      arena.release(rootMark);
      continue;
    }
    // A zstd pack may hand back its own bytes (an entry stored plain): into the arena with them.
    if (rootData.buffer !== rootBlock.buffer || rootData.byteOffset !== rootBlock.byteOffset + H) {
      rootBlock.set(rootData, H);
      rootData = rootBlock.subarray(H, H + rootSize);
    }
    realType[root] = type;
    checkId(root, type, rootBlock, rootSize);
    opts.signal?.throwIfAborted();
    const stack: Frame[] = [{ j: root, data: rootData, next: start[root]!, mark: rootMark }];
    while (stack.length > 0) {
      const f = stack[stack.length - 1]!;
      if (f.next >= start[f.j + 1]!) {
        stack.pop();
        arena.release(f.mark);
        continue;
      }
      const c = list[f.next++]!;
      done[c] = 1;
      if (stack.length > MAX_DELTA_DEPTH) {
        problem({ file: pack.packPath, offset: idx.offsets[c]!, message: `delta chain deeper than ${MAX_DELTA_DEPTH}` });
        continue;
      }
      if (deltaBuf.length <= scan.size[c]!) deltaBuf = Buffer.allocUnsafeSlow(scan.size[c]! + 1);
      const delta = load(c, type, deltaBuf);
      if (delta === undefined) continue;
      const mark = arena.top;
      let block: Buffer;
      let data: Buffer;
      try {
        const size = parseDeltaHeader(delta).dstSize;
        block = arena.alloc(H + size);
        data = applyDelta(f.data, delta, Number.MAX_SAFE_INTEGER, block.subarray(H));
      } catch (e) {
        arena.release(mark);
        problem({ file: pack.packPath, offset: idx.offsets[c]!, message: (e as Error).message });
        continue;
      }
      realType[c] = type;
      depth[c] = stack.length;
      checkId(c, type, block, data.length);
      if ((++resolved & 0x3fff) === 0) opts.onProgress?.('resolving deltas', resolved, deltas);
      if (start[c + 1]! > start[c]!) stack.push({ j: c, data, next: start[c]!, mark });
      else arena.release(mark);
    }
  }
  if (deltas > 0) opts.onProgress?.('resolving deltas', deltas, deltas);
  for (let j = 0; j < n; j++) {
    if (done[j]) continue;
    const p = scan.parent[j]!;
    if (p === BROKEN) continue; // already reported by the scan
    const why =
      p === EXTERNAL_PARENT
        ? `delta base ${toHex(scan.externalBase.get(j)!)} is not in this pack`
        : 'delta never resolved (its base chain is broken or forms a cycle)';
    problem({ file: pack.packPath, offset: idx.offsets[j]!, message: why });
  }

  // verify-pack -v statistics (git's `show_pack_info`).
  let deepest = 0;
  for (let j = 0; j < n; j++) if (depth[j]! > deepest) deepest = depth[j]!;
  const hist = new Array<number>(deepest).fill(0);
  for (let j = 0; j < n; j++) {
    if (scan.parent[j] === NO_PARENT) result.nonDelta++;
    else if (depth[j]! > 0) hist[depth[j]! - 1]!++;
  }
  result.chainLengths = hist;
  if (opts.verboseLine) {
    for (let i = 0; i < n; i++) {
      const j = order[i]!;
      const off = idx.offsets[j]!;
      const end = i + 1 < n ? idx.offsets[order[i + 1]!]! : pack.dataEnd;
      let line = `${toHex(idx.ids, j * len, len)} ${typeName(realType[j]!).padEnd(6)} ${scan.size[j]} ${end - off} ${off}`;
      const p = scan.parent[j]!;
      if (p >= 0) line += ` ${depth[j]} ${toHex(idx.ids, p * len, len)}`;
      opts.verboseLine(line);
    }
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
