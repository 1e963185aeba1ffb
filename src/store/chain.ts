import { corrupt, type GitError } from '../errors.js';
import { MAX_ENTRY_HEADER } from '../format/pack.js';
import { OBJ_OFS_DELTA, isBaseType } from '../format/object-type.js';
import type { Pack, RawEntry } from './pack.js';
import { NO_PARENT, childrenOf, type PackScan } from './pack-scan.js';

/**
 * Delta chains, walked here and nowhere else: from an entry down to its base (git's
 * `unpack_entry` and `packed_to_object_type`, for reads through the object database) and from
 * each base up its tree of deltas (git index-pack's `resolve_deltas`, gix-pack's delta tree, for
 * verify, inspect and the zstd export). One cap, one message.
 */

/**
 * git's pack-objects ceiling on `--depth` (its depth field is 12 bits). Walking down, it counts
 * the deltas between an entry and the nearest base the walk knows (a non-delta entry or a cached
 * base): it stops a REF_DELTA cycle and bounds the stack, while a deeper chain written by another
 * tool is still read, in pack order, base cached before delta. Walking up, it bounds the objects
 * a caller holds at once when it asks for a cap (verify).
 */
export const MAX_DELTA_DEPTH = 4095;

/** The one refusal of a chain, naming the entry it was walked from. */
export function chainTooDeep(file: string, offset: number): GitError {
  return corrupt(
    'bad-delta',
    file,
    offset,
    `delta chain deeper than ${MAX_DELTA_DEPTH} (or a REF_DELTA cycle)`,
  );
}

/** Where an object is: an entry of a pack (by idx position) or a loose file. */
export type ObjectLocation = { pack: Pack; index: number } | { loose: string };

/** What a walk needs of an object database: a REF_DELTA's base outside the delta's own pack. */
export interface BaseLocator {
  locate(id: Uint8Array, pos: number): ObjectLocation | undefined;
}

/** What a walk down a chain reports to its caller (gitoxide's `DecodeEntry`: the cache is the caller's). */
export interface ChainVisitor {
  /** Is the entry at `offset` of `pack` known already (a cached base)? The walk stops there. */
  known(pack: Pack, offset: number): boolean;
  /** Each delta on the way down; its raw bytes are the pack's scratch until its next read. */
  delta(pack: Pack, e: RawEntry): void;
}

/** Where a walk down ended. */
export type ChainEnd =
  /** A non-delta entry, its bytes in the pack's scratch. */
  | { kind: 'base'; pack: Pack; entry: RawEntry }
  /** An entry the visitor knew. */
  | { kind: 'known'; pack: Pack; offset: number }
  /** A loose object (a REF_DELTA's base). */
  | { kind: 'loose'; path: string }
  /** A REF_DELTA whose base is nowhere. */
  | { kind: 'missing'; pack: Pack; entry: RawEntry };

/** A visitor for a walk that only wants the base (nothing cached, deltas not kept). */
export const HEADERS_ONLY: ChainVisitor = { known: () => false, delta: () => undefined };

/**
 * The walk from the entry at `offset` of `pack` down to its base: OFS_DELTA by distance,
 * REF_DELTA by id in the same pack first, as `unpack_entry`, then through `db`. Reads each
 * entry whole, or only its header with `headersOnly`. Throws `chainTooDeep` past
 * MAX_DELTA_DEPTH deltas.
 */
export function walkToBase(
  db: BaseLocator,
  pack: Pack,
  offset: number,
  v: ChainVisitor,
  headersOnly = false,
): ChainEnd {
  let p = pack;
  let off = offset;
  for (let deltas = 0; ; deltas++) {
    if (v.known(p, off)) return { kind: 'known', pack: p, offset: off };
    const end = p.endOf(off);
    const e = p.entryAt(off, headersOnly ? Math.min(end, off + MAX_ENTRY_HEADER) : end, false);
    if (isBaseType(e.hdr.type)) return { kind: 'base', pack: p, entry: e };
    if (deltas === MAX_DELTA_DEPTH) throw chainTooDeep(pack.packPath, offset);
    v.delta(p, e);
    if (e.hdr.type === OBJ_OFS_DELTA) {
      off -= e.hdr.baseDistance;
      continue;
    }
    const j = p.idx.find(e.raw, e.hdr.baseIdPos);
    const where = j >= 0 ? { pack: p, index: j } : db.locate(e.raw, e.hdr.baseIdPos);
    if (where === undefined) return { kind: 'missing', pack: p, entry: e };
    if ('loose' in where) return { kind: 'loose', path: where.loose };
    p = where.pack;
    off = p.idx.offsets[where.index]!;
  }
}

/**
 * A scanned pack's deltas as a tree: the children of each entry (by idx position, in pack
 * order). A chain that reaches no base in the pack (an external base, a broken entry, a
 * REF_DELTA cycle) is in no base's tree: no walk from a base meets it.
 */
export class DeltaTree {
  private readonly start: Int32Array;
  private readonly list: Int32Array;

  constructor(
    readonly scan: PackScan,
    readonly order: Uint32Array,
  ) {
    ({ start: this.start, list: this.list } = childrenOf(scan.parent, order));
  }

  hasDeltas(j: number): boolean {
    return this.start[j + 1]! > this.start[j]!;
  }

  /**
   * Every delta below base `root`, depth first with an explicit stack: `enter(c, parent,
   * depth)` makes a child's state from its parent's (undefined: its subtree is skipped),
   * `leave(state)` runs once a state's subtree is done (the root's too). With `capped`, a
   * child past MAX_DELTA_DEPTH goes to `tooDeep` instead, its subtree skipped.
   */
  descend<S>(
    root: number,
    rootState: S,
    enter: (c: number, parent: S, depth: number) => S | undefined,
    leave: (s: S) => void,
    tooDeep?: (c: number) => void,
  ): void {
    const { start, list } = this;
    const js = [root];
    const states = [rootState];
    const next = [start[root]!];
    while (js.length > 0) {
      const top = js.length - 1;
      const at = next[top]!;
      if (at >= start[js[top]! + 1]!) {
        leave(states.pop()!);
        js.pop();
        next.pop();
        continue;
      }
      next[top] = at + 1;
      const c = list[at]!;
      const depth = js.length;
      if (tooDeep !== undefined && depth > MAX_DELTA_DEPTH) {
        tooDeep(c);
        continue;
      }
      const s = enter(c, states[top]!, depth);
      if (s === undefined) continue;
      js.push(c);
      states.push(s);
      next.push(start[c]!);
    }
  }
}

/**
 * Real type (the type at the bottom of the chain) and delta depth of every entry, walking each
 * base's tree. Entries whose chain does not reach a non-delta base (external or broken) get
 * type 0; a chain of any depth is followed (nothing is held per level).
 */
export function resolveChains(
  scan: PackScan,
  order: Uint32Array,
): { realType: Uint8Array; depth: Uint16Array } {
  const n = scan.parent.length;
  const realType = new Uint8Array(n);
  const depth = new Uint16Array(n);
  const tree = new DeltaTree(scan, order);
  let type = 0;
  const enter = (c: number, _: number, d: number): number => {
    realType[c] = type;
    depth[c] = Math.min(d, 0xffff);
    return c;
  };
  const leave = (): void => undefined;
  for (let i = 0; i < n; i++) {
    const root = order[i]!;
    if (scan.parent[root] !== NO_PARENT) continue;
    type = realType[root] = scan.type[root]!;
    if (tree.hasDeltas(root)) tree.descend(root, root, enter, leave);
  }
  return { realType, depth };
}
