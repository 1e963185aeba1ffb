import { GitError } from '../errors.js';
import { fromHex, type HashAlgo } from '../hash/algo.js';
import { OidTable } from '../hash/oid-table.js';
import { TREE_ENTRY_GITLINK, TREE_ENTRY_TREE, forEachCommitLink, forEachTreeEntry, hexInto } from '../format/object-parse.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE, typeFromName } from '../format/object-type.js';
import type { ObjectDatabase } from '../store/odb.js';
import type { Pack } from '../store/pack.js';

export interface WalkResult {
  commits: number;
  trees: number;
  blobs: number;
  tags: number;
  /** Objects named by others but not found (a partial clone's promised objects). */
  missing: number;
  /** Bytes of object data read (commits, trees and tags; blobs too with readBlobs). */
  bytesRead: number;
  ms: number;
}

/** A blob whose entry is larger than this has its header read first, to see if it is big. */
const HEAD_FIRST_ABOVE = 4096;
/** A blob at least this large, stored whole in a git pack, is inflated a chunk at a time and dropped. */
const STREAM_ABOVE = 1 << 20;

/** Slots of the walk's cache of recent ids: 64 Ki ids (1.25 MiB for SHA-1), measured best of 2^14–2^17 on git.git. */
const RECENT_BITS = 16;

/**
 * The ids of tree entries the walk met last, in front of its visited table: one per slot, the
 * slot named by the low bits of the id's first word, compared a 32-bit word at a time. Nearly
 * every entry of a tree is an id already seen (git.git: 135 M entries, 849 k objects), and the
 * trees of one commit after another name mostly the same ones, so this small table answers 98 %
 * of them; the visited table's byte-by-byte insert cost ~60 ns an entry, half the walk's time
 * (issue 20). An id is put here only once it is in the visited table; a hit is exact (every word
 * compared), so the walk's result is the same.
 */
class RecentIds {
  private readonly words: Int32Array;
  private readonly w: number;
  private readonly mask = (1 << RECENT_BITS) - 1;

  constructor(len: number) {
    this.w = len >> 2;
    this.words = new Int32Array(this.w << RECENT_BITS);
    // An empty slot must match no id: its first word names another slot.
    for (let s = 0; s <= this.mask; s++) this.words[s * this.w] = ~s;
  }

  /** Whether the id at `at` of the bytes under `dv` is the one in its slot. */
  has(dv: DataView, at: number): boolean {
    const w = this.w;
    const first = dv.getInt32(at, true);
    const o = (first & this.mask) * w;
    const words = this.words;
    if (words[o] !== first) return false;
    for (let k = 1; k < w; k++) if (words[o + k] !== dv.getInt32(at + 4 * k, true)) return false;
    return true;
  }

  /** Makes the id at `at` its slot's: the caller has put it in the visited table. */
  add(dv: DataView, at: number): void {
    const w = this.w;
    const first = dv.getInt32(at, true);
    const o = (first & this.mask) * w;
    for (let k = 0; k < w; k++) this.words[o + k] = dv.getInt32(at + 4 * k, true);
  }
}

/**
 * The size of a big blob stored whole (not as a delta) in a git pack, after inflating it a chunk
 * at a time without holding it (a 1.5 GiB blob took `--read-blobs` to 3.1 GiB: issue 20); -1
 * for any other object, which is read whole.
 */
function readBigBlob(where: { pack: Pack; index: number } | { loose: string }): number {
  if ('loose' in where || where.pack.isZpack) return -1;
  const { pack } = where;
  const off = pack.idx.offsets[where.index]!;
  const end = pack.endOf(off);
  if (end - off <= HEAD_FIRST_ABOVE) return -1;
  const hdr = pack.entryHead(off, end);
  if (hdr.type !== OBJ_BLOB || hdr.size < STREAM_ABOVE) return -1;
  pack.inflateChunked(off, end, () => undefined);
  return hdr.size;
}

/**
 * Every object reachable from the refs, read through our reader: the equivalent of
 * `git rev-list --objects --all` (commits and trees are read and parsed, blobs only named unless
 * `readBlobs`). An explicit stack of object numbers, ids as bytes in one visited table, commits
 * and trees parsed byte by byte (no strings per entry).
 */
export function walkObjects(odb: ObjectDatabase, algo: HashAlgo, refs: string, opts: { readBlobs?: boolean } = {}): WalkResult {
  const t0 = performance.now();
  const len = algo.len;
  const seen = new OidTable(len, 1 << 16);
  const recent = new RecentIds(len);
  // Every object is looked up: tables over the idx bytes instead of a binary search each.
  odb.indexForBulkLookups();
  const res: WalkResult = { commits: 0, trees: 0, blobs: 0, tags: 0, missing: 0, bytesRead: 0, ms: 0 };
  // The stack: numbers in `seen`, and a type hint each (0 = unknown, for refs).
  let stack = new Int32Array(1 << 12);
  let hints = new Uint8Array(1 << 12);
  let top = 0;
  const push = (buf: Uint8Array, pos: number, type: number): void => {
    const v = seen.insert(buf, pos);
    if (v < 0) return;
    if (top === stack.length) {
      const s2 = new Int32Array(top * 2);
      s2.set(stack);
      stack = s2;
      const h2 = new Uint8Array(top * 2);
      h2.set(hints);
      hints = h2;
    }
    stack[top] = v;
    hints[top] = type;
    top++;
  };
  for (const line of refs.split('\n')) {
    const hex = line.split(' ')[0];
    if (!hex) continue;
    const id = fromHex(hex, algo);
    if (id) push(id, 0, 0);
  }
  const id = Buffer.alloc(len);
  const parsed = Buffer.alloc(len);
  while (top > 0) {
    top--;
    const type = hints[top]!;
    seen.id(stack[top]!).copy(id); // a view until the next insert: copied
    const where = odb.locate(id, 0);
    if (where === undefined) {
      res.missing++;
      continue;
    }
    if (type === OBJ_BLOB && !opts.readBlobs) {
      res.blobs++;
      continue;
    }
    if (type === OBJ_BLOB) {
      const size = readBigBlob(where);
      if (size >= 0) {
        res.blobs++;
        res.bytesRead += size;
        continue;
      }
    }
    const obj = odb.readAt(where, true); // parsed and dropped before the next read
    res.bytesRead += obj.data.length;
    const d = obj.data;
    if (obj.type === OBJ_COMMIT) {
      res.commits++;
      forEachCommitLink(d, (isTree, at) => {
        hexInto(d, at, parsed, len);
        push(parsed, 0, isTree ? OBJ_TREE : OBJ_COMMIT);
      });
    } else if (obj.type === OBJ_TREE) {
      res.trees++;
      const dv = new DataView(d.buffer, d.byteOffset, d.byteLength);
      const bad = forEachTreeEntry(d, len, (_s, _e, at, kind) => {
        if (kind === TREE_ENTRY_GITLINK || recent.has(dv, at)) return;
        push(d, at, kind === TREE_ENTRY_TREE ? OBJ_TREE : OBJ_BLOB);
        recent.add(dv, at);
      });
      if (bad >= 0) throw new GitError('bad-object', `malformed tree ${id.toString('hex')}`, { objectId: id.toString('hex') });
    } else if (obj.type === OBJ_TAG) {
      res.tags++;
      const text = d.toString('latin1', 0, Math.min(d.length, 256));
      const m = /^object ([0-9a-f]+)\ntype (\w+)\n/.exec(text);
      if (m) {
        const target = fromHex(m[1]!, algo);
        if (target) push(target, 0, typeFromName(m[2]!) ?? 0);
      }
    } else {
      res.blobs++;
    }
  }
  res.ms = performance.now() - t0;
  return res;
}
