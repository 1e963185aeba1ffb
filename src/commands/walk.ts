import { GitError } from '../errors.js';
import { fromHex, toHex, type HashAlgo } from '../hash/algo.js';
import { OidTable } from '../hash/oid-table.js';
import {
  TREE_ENTRY_GITLINK,
  TREE_ENTRY_TREE,
  forEachCommitLink,
  forEachTreeEntry,
  hexInto,
} from '../format/object-parse.js';
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

/** The hint's low bits: the type a link says its object has (0 for a ref's). */
const TYPE_MASK = 7;
/** Hint bit: named by a tag (git's `handle_commit` says `bad object <id>` when it is missing). */
const TAGGED = 8;
/** Hint bit: named by an object read from a promisor pack, so promised when missing (git's `is_promisor_object`). */
const PROMISED = 16;

export interface WalkOptions {
  /** Inflate every blob as well (`--read-blobs`). */
  readBlobs?: boolean | undefined;
  /** The repository's `shallow` file: commits whose parents are not walked (git's `register_shallow`). */
  shallow?: string | undefined;
}

/**
 * Every object reachable from the refs, read through our reader: the equivalent of
 * `git rev-list --objects --all` (commits and trees are read and parsed, blobs only named unless
 * `readBlobs`). An explicit stack of object numbers, ids as bytes in one visited table, commits
 * and trees parsed byte by byte (no strings per entry). A missing object is counted when the
 * repository's promisor packs promise it (a partial clone: git would fetch it); any other is a
 * GitError (`missing-object`) worded as git's rev-list dies on it.
 */
export function walkObjects(
  odb: ObjectDatabase,
  algo: HashAlgo,
  refs: string,
  opts: WalkOptions = {},
): WalkResult {
  const t0 = performance.now();
  const len = algo.len;
  const seen = new OidTable(len, 1 << 16);
  const recent = new RecentIds(len);
  // Every object is looked up: tables over the idx bytes instead of a binary search each.
  odb.indexForBulkLookups();
  const promised = new PromisedIds(odb, algo);
  const shallow = shallowIds(opts.shallow, algo);
  const res: WalkResult = {
    commits: 0,
    trees: 0,
    blobs: 0,
    tags: 0,
    missing: 0,
    bytesRead: 0,
    ms: 0,
  };
  // The stack: numbers in `seen`, a hint each (type and bits above), and who named it.
  let stack = new Int32Array(1 << 12);
  let hints = new Uint8Array(1 << 12);
  let from = new Int32Array(1 << 12);
  let top = 0;
  let cur = -1;
  const push = (buf: Uint8Array, pos: number, hint: number): void => {
    const v = seen.insert(buf, pos);
    if (v < 0) return;
    if (top === stack.length) {
      stack = grown(stack, top * 2);
      from = grown(from, top * 2);
      const h2 = new Uint8Array(top * 2);
      h2.set(hints);
      hints = h2;
    }
    stack[top] = v;
    hints[top] = hint;
    from[top] = cur;
    top++;
  };
  // git's setup_revisions reads every ref before the walk: `bad object <ref>` for a missing one.
  for (const tip of refTips(refs, algo)) {
    if (odb.locate(tip.id, 0) === undefined && !promised.has(tip.id))
      throw new GitError('missing-object', `bad object ${tip.name}`, { objectId: toHex(tip.id) });
    push(tip.id, 0, 0);
  }
  const id = Buffer.alloc(len);
  const parsed = Buffer.alloc(len);
  while (top > 0) {
    top--;
    const hint = hints[top]!;
    const type = hint & TYPE_MASK;
    cur = stack[top]!;
    seen.id(cur).copy(id); // a view until the next insert: copied
    const where = odb.locate(id, 0);
    if (where === undefined) {
      if ((hint & PROMISED) === 0 && !promised.has(id))
        throw missingObject(id, hint, from[top]! >= 0 ? seen.id(from[top]!) : undefined);
      res.missing++;
      continue;
    }
    // What an object of a promisor pack names is promised (git's add_promisor_object).
    const named = 'pack' in where && where.pack.promisor ? PROMISED : 0;
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
      // A shallow commit's parents are not walked (git grafts it with none).
      const cut = shallow !== undefined && shallow.lookup(id, 0) >= 0;
      forEachCommitLink(d, (isTree, at) => {
        if (!isTree && cut) return;
        hexInto(d, at, parsed, len);
        push(parsed, 0, (isTree ? OBJ_TREE : OBJ_COMMIT) | named);
      });
    } else if (obj.type === OBJ_TREE) {
      res.trees++;
      const dv = new DataView(d.buffer, d.byteOffset, d.byteLength);
      const bad = forEachTreeEntry(d, len, (_s, _e, at, kind) => {
        if (kind === TREE_ENTRY_GITLINK || recent.has(dv, at)) return;
        push(d, at, (kind === TREE_ENTRY_TREE ? OBJ_TREE : OBJ_BLOB) | named);
        recent.add(dv, at);
      });
      if (bad >= 0)
        throw new GitError('bad-object', `malformed tree ${id.toString('hex')}`, {
          objectId: id.toString('hex'),
        });
    } else if (obj.type === OBJ_TAG) {
      res.tags++;
      const target = tagTarget(d, algo);
      if (target !== undefined) push(target.id, 0, target.type | TAGGED | named);
    } else {
      res.blobs++;
    }
  }
  res.ms = performance.now() - t0;
  return res;
}

function grown(a: Int32Array, size: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(size);
  b.set(a);
  return b;
}

/** A tag's `object` and the type its `type` line names (0 when unknown). */
function tagTarget(d: Buffer, algo: HashAlgo): { id: Buffer; type: number } | undefined {
  const text = d.toString('latin1', 0, Math.min(d.length, 256));
  const m = /^object ([0-9a-f]+)\ntype (\w+)\n/.exec(text);
  const id = m ? fromHex(m[1]!, algo) : undefined;
  return id === undefined ? undefined : { id, type: typeFromName(m![2]!) ?? 0 };
}

/** The refs' objects in the order git's `--all` takes them: the refs as listed, then HEAD. */
function refTips(refs: string, algo: HashAlgo): { id: Buffer; name: string }[] {
  const tips: { id: Buffer; name: string }[] = [];
  for (const line of refs.split('\n')) {
    const sp = line.indexOf(' ');
    const id = fromHex(sp < 0 ? line : line.slice(0, sp), algo);
    if (id) tips.push({ id, name: sp < 0 ? line : line.slice(sp + 1) });
  }
  return [...tips.filter((t) => t.name !== 'HEAD'), ...tips.filter((t) => t.name === 'HEAD')];
}

/** The error git's rev-list dies with on a missing object that nothing promised; `child` named it (a commit's parent). */
function missingObject(id: Buffer, hint: number, child: Buffer | undefined): GitError {
  const hex = id.toString('hex');
  const type = hint & TYPE_MASK;
  // handle_commit (a tag's object), process_tree, rev-list's finish_object, process_parents.
  if ((hint & TAGGED) !== 0 || type === 0)
    return new GitError('missing-object', `bad object ${hex}`, { objectId: hex });
  if (type === OBJ_TREE)
    return new GitError('missing-object', `bad tree object ${hex}`, { objectId: hex });
  if (type === OBJ_BLOB)
    return new GitError('missing-object', `missing blob object '${hex}'`, { objectId: hex });
  // git says `error: Could not read <parent>` first: the detail, which the CLI prints so.
  return new GitError(
    'missing-object',
    `Failed to traverse parents of commit ${child?.toString('hex') ?? hex}`,
    { objectId: hex, detail: `Could not read ${hex}` },
  );
}

/** The ids of a `shallow` file's lines, or undefined when there are none. */
function shallowIds(text: string | undefined, algo: HashAlgo): OidTable | undefined {
  const ids = (text ?? '').split('\n').flatMap((l) => fromHex(l.trim(), algo) ?? []);
  if (ids.length === 0) return undefined;
  const t = new OidTable(algo.len, ids.length);
  for (const x of ids) t.insert(x, 0);
  return t;
}

/**
 * git's `is_promisor_object`: what the promisor packs hold and every object their objects name
 * (a commit's tree and parents, a tree's entries, a tag's object). Built on first use only: the
 * walk answers most missing objects from the object that named them (`PROMISED`).
 */
class PromisedIds {
  private table: OidTable | undefined;

  constructor(
    private readonly odb: ObjectDatabase,
    private readonly algo: HashAlgo,
  ) {}

  has(id: Uint8Array): boolean {
    if (!this.odb.packs.some((p) => p.promisor)) return false;
    this.table ??= this.build();
    return this.table.lookup(id, 0) >= 0;
  }

  private build(): OidTable {
    const len = this.algo.len;
    const t = new OidTable(len, 1 << 16);
    const link = Buffer.alloc(len);
    for (const p of this.odb.packs) {
      if (!p.promisor) continue;
      const ids = p.idx.ids;
      for (let j = 0; j < p.count; j++) {
        t.insert(ids, j * len);
        const off = p.idx.offsets[j]!;
        if (p.entryHead(off, p.endOf(off)).type === OBJ_BLOB) continue; // names nothing
        const obj = this.odb.readPacked(p, off, true);
        const d = obj.data;
        if (obj.type === OBJ_COMMIT) {
          forEachCommitLink(d, (_isTree, at) => hexInto(d, at, link, len) && t.insert(link, 0));
        } else if (obj.type === OBJ_TREE) {
          forEachTreeEntry(d, len, (_s, _e, at) => t.insert(d, at));
        } else if (obj.type === OBJ_TAG) {
          const target = tagTarget(d, this.algo);
          if (target !== undefined) t.insert(target.id, 0);
        }
      }
    }
    return t;
  }
}
