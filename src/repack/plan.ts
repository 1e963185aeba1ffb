import { corrupt } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import { OidRefTable } from '../hash/oid-table.js';
import { firstUnsortedId, idOffsetInFile } from '../format/idx.js';
import { MAX_DELTA_DEPTH } from '../store/chain.js';
import type { Pack } from '../store/pack.js';
import { BROKEN, EXTERNAL_PARENT, NO_PARENT, scanPack, type PackScan } from '../store/pack-scan.js';
import { releaseNow } from '../release.js';
import { noGoodCopy, type CopyProof } from './duplicates.js';
import { idOf } from './plan-index.js';

export { idOf, newIndex } from './plan-index.js';

/**
 * The plan of a rewrite, as plain data (git's `compute_write_order` and what it needs): which
 * objects go in (the first copy of each id; none kept elsewhere), where each one is read from,
 * which base each delta keeps, and the order of the new pack. Nothing is inflated to make it:
 * the scan reads entry headers and zlib headers only.
 */

export interface PartitionInput {
  kind: 'normal' | 'promisor';
  /** Source packs in order of preference: the first copy of an object wins. */
  packs: Pack[];
  /** Loose object ids (the normal partition only). */
  loose: Buffer[];
  looseDir: string;
}

/** srcPack value of a loose object (LOOSE8 when there are fewer than 255 packs and it fits a byte). */
const LOOSE16 = 0xffff;
const LOOSE8 = 0xff;
/** base[] marks: no base (a whole object in its source), or a delta to be written whole. */
export const NO_BASE = -1;
export const WHOLE = -2;

export interface Plan {
  input: PartitionInput;
  len: number;
  /** Objects selected (numbered 0..n-1 in selection order). */
  n: number;
  duplicatesDropped: number;
  excluded: number;
  /** Per source pack: the scan (its sizes and, while planning, its bases). */
  scans: PackScan[];
  /** Per source pack and entry: type (3 bits), block code (2), FLEVEL (2), header length (9). */
  info: Uint16Array[];
  /** Per source pack and entry: the entry's length in bytes (header and data). */
  entryLen: (Uint32Array | Float64Array)[];
  /** Per selected object: its source pack (or the loose mark) and its index there. */
  srcPack: Uint8Array | Uint16Array;
  srcIdx: Uint32Array;
  looseMark: number;
  /** Per selected object: the selection number of its base, NO_BASE, or WHOLE. */
  base: Int32Array;
  /** The new pack's order: selection numbers, each base before its deltas (shared: the writing thread reads it). */
  outOrder: Uint32Array;
  /**
   * Copies of duplicated ids that are not kept, as (selection number, source pack or looseMark,
   * index) triples; emptied once they are proven (`proveDuplicates`).
   */
  dups: number[];
  /** Pack entries proven not to hash to their id (`copyKey`): a delta on one of them is written whole. */
  forged: Set<number>;
  /** Selected objects whose copy in a kept pack does not hash to their id: that copy's proof. */
  keptForged: Map<number, CopyProof>;
}

/** The key of entry `j` of source pack `pi` in `Plan.forged`. */
const copyKey = (pi: number, j: number): number => pi * 0x100000000 + j;

export const typeOf = (p: Plan, pi: number, j: number): number => p.info[pi]![j]! & 7;
export const blockOf = (p: Plan, pi: number, j: number): number => (p.info[pi]![j]! >> 3) & 3;
export const flevelOf = (p: Plan, pi: number, j: number): number => (p.info[pi]![j]! >> 5) & 3;
export const headerLenOf = (p: Plan, pi: number, j: number): number => p.info[pi]![j]! >> 7;
export const entryEnd = (p: Plan, pi: number, j: number): number =>
  p.input.packs[pi]!.idx.offsets[j]! + p.entryLen[pi]![j]!;
/** An object not copied from a pack entry: a loose object, or a delta written whole. */
export const isDirect = (p: Plan, s: number): boolean =>
  p.srcPack[s] === p.looseMark || p.base[s] === WHOLE;

export interface PlanOptions {
  algo: HashAlgo;
  /** Objects that stay elsewhere (kept or cruft packs): not packed again. */
  excluded: (id: Uint8Array, pos: number) => boolean;
  /** A dry run keeps the sources' tables (nothing is written after it). */
  dryRun: boolean;
  onProgress?: ((phase: string, done: number, total: number) => void) | undefined;
  /**
   * Hashes copies of ids held more than once, given as (source pack, index) pairs (`pi` the
   * plan's looseMark: loose object `j`); the proofs in the same order. Without it, the first
   * copy is kept unproven.
   */
  proveCopies?: ((copies: number[]) => Promise<CopyProof[]>) | undefined;
  /**
   * Hashes the copy of an excluded id that stays where it is (a kept pack). When it does not
   * hash to its id, this partition's copy is packed after all (proven as a duplicate is).
   */
  proveExcluded?: ((id: Uint8Array, pos: number) => CopyProof) | undefined;
}

/** Scans, selects, finds bases and orders: the whole plan (steps 1-4 of the rewrite). */
export async function planPartition(input: PartitionInput, opts: PlanOptions): Promise<Plan> {
  const scans = scanSources(input.packs);
  const info = scans.map(packInfo);
  const { plan, selOf } = selectObjects(input, scans, info, opts);
  if (opts.proveCopies !== undefined)
    await proveDuplicates(plan, opts.proveCopies, opts.onProgress);
  linkBases(plan, selOf);
  selOf.release(); // 4-8 bytes per object, needed only to find the bases
  for (const scan of scans) releaseNow(scan.parent); // read only there (4 bytes per object)
  // The writing needs the sources' offsets and CRC32s, not their ids (17 MB on git.git): they
  // are read from the .idx again for the new index.
  if (!opts.dryRun) for (const p of input.packs) p.releaseIds();
  computeWriteOrder(plan);
  return plan;
}

/** 1. The source packs' entries, without inflating; their ids must be sorted (the new index merges them). */
function scanSources(packs: Pack[]): PackScan[] {
  return packs.map((p) => {
    const unsorted = firstUnsortedId(p.idx);
    if (unsorted >= 0)
      throw corrupt(
        'bad-idx',
        p.idxPath,
        idOffsetInFile(p.idx, unsorted),
        'object ids out of order',
      );
    return scanPack(p, {
      checkCrc: false,
      // Only headers are needed here (the writing checks each copy's CRC32): an entry over 64 KiB
      // that the current chunk does not hold has only its head read (a pack of big blobs is not
      // read twice).
      headsOnly: true,
      onProblem: (pr) => {
        throw corrupt('bad-pack', pr.file, pr.offset, pr.message);
      },
    });
  });
}

/** What the writing needs of each entry besides its size, in 16 bits instead of four bytes. */
function packInfo(sc: PackScan): Uint16Array {
  const a = new Uint16Array(sc.type.length);
  for (let j = 0; j < a.length; j++)
    a[j] = sc.type[j]! | (sc.block[j]! << 3) | (sc.flevel[j]! << 5) | (sc.headerLen[j]! << 7);
  releaseNow(sc.type, sc.block, sc.flevel, sc.headerLen);
  return a;
}

/** The selection number of an object, by its id (-1 when it is not selected). */
interface Selection {
  lookup(ids: Uint8Array, pos: number): number;
  release(): void;
}

/**
 * The selection of one pack and nothing loose, the everyday case: its ids are unique (the scan
 * refuses an idx whose ids are not strictly increasing), so no table of ids is needed. An id is
 * found in the pack's idx and mapped to its selection number: 4 bytes per object instead of 8,
 * and no hashing of each id (jq: 40 % of the planning's CPU).
 */
class OnePackSelection implements Selection {
  constructor(
    private readonly pack: Pack,
    /** By idx position: the selection number, or -1 (excluded). */
    private selOfIdx: Int32Array,
  ) {}

  /** By idx position, without looking the id up. */
  at(j: number): number {
    return this.selOfIdx[j]!;
  }

  lookup(ids: Uint8Array, pos: number): number {
    const j = this.pack.idx.find(ids, pos);
    return j < 0 ? -1 : this.selOfIdx[j]!;
  }

  release(): void {
    releaseNow(this.selOfIdx);
    this.selOfIdx = new Int32Array(0);
  }
}

/**
 * 2. The first copy of each id wins; objects kept elsewhere are left out. Selected objects are
 * numbered in order; the table reads their ids where they already are.
 */
function selectObjects(
  input: PartitionInput,
  scans: PackScan[],
  info: Uint16Array[],
  opts: PlanOptions,
): { plan: Plan; selOf: Selection } {
  const { packs, loose } = input;
  const len = opts.algo.len;
  let total = loose.length;
  for (const p of packs) total += p.count;
  const srcPack = packs.length < LOOSE8 ? new Uint8Array(total) : new Uint16Array(total);
  const plan: Plan = {
    input,
    len,
    n: 0,
    duplicatesDropped: 0,
    excluded: 0,
    scans,
    info,
    entryLen: [],
    srcPack,
    srcIdx: new Uint32Array(total),
    looseMark: srcPack instanceof Uint8Array ? LOOSE8 : LOOSE16,
    base: new Int32Array(0),
    outOrder: new Uint32Array(0),
    dups: [],
    forged: new Set(),
    keptForged: new Map(),
  };
  const only = packs.length === 1 && loose.length === 0 ? packs[0]! : undefined;
  if (only !== undefined) {
    const selOfIdx = new Int32Array(only.count).fill(-1);
    const order = only.order;
    const ids = only.idx.ids;
    let n = 0;
    for (let i = 0; i < order.length; i++) {
      const j = order[i]!;
      const elsewhere = keptCopy(opts, ids, j * len);
      if (elsewhere?.ok === true) plan.excluded++;
      else {
        if (elsewhere !== undefined) plan.keptForged.set(n, elsewhere);
        plan.srcIdx[n] = j;
        selOfIdx[j] = n++;
      }
      if (((i + 1) & 0x3fff) === 0) opts.onProgress?.('counting objects', i + 1, total);
    }
    plan.n = n;
    return { plan: finishSelection(plan, opts), selOf: new OnePackSelection(only, selOfIdx) };
  }
  const table = new OidRefTable(len, total, (v, ref) => idOf(plan, v, ref));
  const add = (pi: number, j: number, ids: Uint8Array, pos: number): void => {
    const elsewhere = keptCopy(opts, ids, pos);
    if (elsewhere?.ok === true) {
      plan.excluded++;
      return;
    }
    const s = table.size;
    plan.srcPack[s] = pi;
    plan.srcIdx[s] = j;
    const kept = table.insert(s, ids, pos);
    if (kept < 0) {
      plan.duplicatesDropped++;
      plan.dups.push(~kept, pi, j);
    } else if (elsewhere !== undefined) plan.keptForged.set(s, elsewhere);
  };
  let counted = 0;
  packs.forEach((p, pi) => {
    const order = p.order;
    const ids = p.idx.ids;
    for (let i = 0; i < order.length; i++) {
      add(pi, order[i]!, ids, order[i]! * len);
      if ((++counted & 0x3fff) === 0) opts.onProgress?.('counting objects', counted, total);
    }
  });
  loose.forEach((id, li) => add(plan.looseMark, li, id, 0));
  plan.n = table.size;
  return { plan: finishSelection(plan, opts), selOf: table };
}

/** An id kept elsewhere: the proof of that copy (ok without `proveExcluded`); undefined when it is not excluded. */
function keptCopy(opts: PlanOptions, ids: Uint8Array, pos: number): CopyProof | undefined {
  if (!opts.excluded(ids, pos)) return undefined;
  return opts.proveExcluded?.(ids, pos) ?? { ok: true, file: '', offset: 0 };
}

function finishSelection(plan: Plan, opts: PlanOptions): Plan {
  const { packs } = plan.input;
  opts.onProgress?.('counting objects', plan.n, plan.n);
  // Each source entry's length: from here on nothing needs the sources' pack order (8 bytes per
  // object for the order and its inverse, against 4 for this).
  plan.entryLen = packs.map((p) => p.entryLengths());
  if (!opts.dryRun) for (const p of packs) p.releaseOrder();
  plan.base = new Int32Array(plan.n).fill(NO_BASE);
  return plan;
}

/**
 * 2b. Every copy of each duplicated id is hashed; the first that hashes to its id is kept (the
 * sources' order otherwise). A copy that does not is marked, so that a delta on it in its own
 * pack is written whole (resolved there and hashed): against the genuine base it would become
 * another object. No copy hashes right: fatal, before anything is written.
 */
async function proveDuplicates(
  plan: Plan,
  prove: (copies: number[]) => Promise<CopyProof[]>,
  onProgress: PlanOptions['onProgress'],
): Promise<void> {
  const { dups } = plan;
  const groups = new Map<number, number[]>();
  for (const s of plan.keptForged.keys()) groups.set(s, [plan.srcPack[s]!, plan.srcIdx[s]!]);
  for (let k = 0; k < dups.length; k += 3) {
    const s = dups[k]!;
    let g = groups.get(s);
    if (g === undefined) groups.set(s, (g = [plan.srcPack[s]!, plan.srcIdx[s]!]));
    g.push(dups[k + 1]!, dups[k + 2]!);
  }
  plan.dups = [];
  if (groups.size === 0) return;
  onProgress?.('proving duplicates', 0, groups.size);
  const proofs = await prove([...groups.values()].flat());
  let at = 0;
  for (const [s, copies] of groups) {
    const kept = plan.keptForged.get(s);
    const mine = proofs.slice(at, (at += copies.length / 2));
    const chosen = mine.findIndex((p) => p.ok);
    mine.forEach((p, c) => {
      if (!p.ok && copies[2 * c] !== plan.looseMark)
        plan.forged.add(copyKey(copies[2 * c]!, copies[2 * c + 1]!));
    });
    if (chosen < 0) {
      const ref = { buf: new Uint8Array(0), pos: 0 };
      idOf(plan, s, ref);
      throw noGoodCopy(
        Buffer.from(ref.buf.subarray(ref.pos, ref.pos + plan.len)).toString('hex'),
        kept === undefined ? mine : [kept, ...mine],
      );
    }
    plan.srcPack[s] = copies[2 * chosen]!;
    plan.srcIdx[s] = copies[2 * chosen + 1]!;
  }
  onProgress?.('proving duplicates', groups.size, groups.size);
}

/** 3. A delta keeps its base if the base object is in the output (any copy of it); else it is written whole. */
function linkBases(plan: Plan, table: Selection): void {
  const { packs } = plan.input;
  for (let s = 0; s < plan.n; s++) {
    const pi = plan.srcPack[s]!;
    if (pi === plan.looseMark) continue;
    const scan = plan.scans[pi]!;
    const j = plan.srcIdx[s]!;
    const par = scan.parent[j]!;
    if (par === NO_PARENT) continue;
    let b = -1;
    // (a base copy proven not to hash to its id: this delta was made against other content)
    if (par >= 0 && plan.forged.has(copyKey(pi, par))) b = -1;
    else if (par >= 0)
      b =
        table instanceof OnePackSelection
          ? table.at(par)
          : table.lookup(packs[pi]!.idx.ids, par * plan.len);
    else if (par === EXTERNAL_PARENT) b = table.lookup(scan.externalBase.get(j)!, 0);
    else if (par === BROKEN)
      throw corrupt(
        'bad-pack',
        packs[pi]!.packPath,
        packs[pi]!.idx.offsets[j]!,
        'unparseable entry',
      );
    plan.base[s] = b >= 0 ? b : WHOLE;
  }
}

/**
 * 4. Output order (git's compute_write_order): selection order, each base hoisted before its
 * deltas; a cycle across copies or a chain past the depth cap is broken by writing that delta whole.
 */
function computeWriteOrder(plan: Plan): void {
  const { n, base } = plan;
  // In shared memory: the thread that writes a large pack reads the layout from it.
  const outOrder = new Uint32Array(new SharedArrayBuffer(4 * n));
  const state = new Uint8Array(n); // 0 new, 1 on the chain being placed, 2 placed
  const depth = new Uint16Array(n);
  let placed = 0;
  // The chain being placed, in its first `top` places (never shrunk: emptied and grown again for
  // each object, it was most of what planning allocated).
  const chain: number[] = [];
  let top = 0;
  for (let s0 = 0; s0 < n; s0++) {
    if (state[s0] === 2) continue;
    top = 0;
    let cur = s0;
    state[cur] = 1;
    chain[top++] = cur;
    for (;;) {
      const b = base[cur]!;
      if (b < 0 || state[b] === 2) break;
      if (state[b] === 1) {
        base[cur] = WHOLE;
        break;
      }
      state[b] = 1;
      chain[top++] = b;
      cur = b;
    }
    for (let k = top - 1; k >= 0; k--) {
      const s = chain[k]!;
      const b = base[s]!;
      if (b >= 0) {
        const d = depth[b]! + 1;
        if (d > MAX_DELTA_DEPTH) base[s] = WHOLE;
        else depth[s] = d;
      }
      state[s] = 2;
      outOrder[placed++] = s;
    }
  }
  releaseNow(state, depth);
  plan.outOrder = outOrder;
}
