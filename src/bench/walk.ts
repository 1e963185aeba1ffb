import {
  TREE_ENTRY_GITLINK,
  TREE_ENTRY_TREE,
  committerTime,
  forEachCommitLink,
  forEachTreeEntry,
  hexInto,
} from '../format/object-parse.js';
import { join } from 'node:path';
import type { CachedObject } from '../delta/cache.js';
import { fromHex, type HashAlgo } from '../hash/algo.js';
import { ObjectDatabase } from '../store/odb.js';
import type { BaseCache } from './base-cache.js';

/**
 * The object reader of the reader experiments: the repository's ObjectDatabase (one delta-chain
 * resolver, git's `unpack_entry`) with the cache variant under test plugged in.
 */
export class BenchReader {
  private readonly odb: ObjectDatabase;
  constructor(
    objectsDir: string,
    readonly algo: HashAlgo,
    cache: BaseCache,
  ) {
    this.odb = ObjectDatabase.open(algo, [objectsDir]);
    this.odb.cache = cache;
  }

  get cache(): BaseCache {
    return this.odb.cache as BaseCache;
  }

  set cache(c: BaseCache) {
    this.odb.cache = c;
  }

  /** Entries inflated since the counter was last set. */
  get inflated(): number {
    return this.odb.inflated;
  }

  set inflated(n: number) {
    this.odb.inflated = n;
  }

  close(): void {
    this.odb.close();
  }

  /** The object, or undefined when it is missing (partial clones). */
  read(id: Uint8Array, pos = 0): CachedObject | undefined {
    const where = this.odb.locate(id, pos);
    return where === undefined ? undefined : this.odb.readAt(where);
  }
}

interface CommitInfo {
  tree: Buffer;
  parents: Buffer[];
  time: number;
}

function parseCommit(data: Buffer, algo: HashAlgo): CommitInfo {
  let tree: Buffer | undefined;
  const parents: Buffer[] = [];
  forEachCommitLink(data, (isTree, at) => {
    const id = Buffer.alloc(algo.len);
    if (!hexInto(data, at, id, algo.len)) return;
    if (isTree) tree = id;
    else parents.push(id);
  });
  if (tree === undefined) throw new Error('commit without a tree');
  return { tree, parents, time: committerTime(data) };
}

interface TreeEntry {
  name: Buffer;
  isTree: boolean;
  isGitlink: boolean;
  id: Buffer;
}

function parseTree(data: Buffer, len: number): TreeEntry[] {
  const out: TreeEntry[] = [];
  forEachTreeEntry(data, len, (nameStart, nameEnd, at, kind) => {
    out.push({
      name: data.subarray(nameStart, nameEnd),
      isTree: kind === TREE_ENTRY_TREE,
      isGitlink: kind === TREE_ENTRY_GITLINK,
      id: data.subarray(at, at + len),
    });
  });
  return out;
}

/** git's `base_name_compare`: a tree sorts as if its name ended in '/'. */
function compareEntries(a: TreeEntry, b: TreeEntry): number {
  const n = Math.min(a.name.length, b.name.length);
  const c = a.name.compare(b.name, 0, n, 0, n);
  if (c !== 0) return c;
  const ca = a.name.length > n ? a.name[n]! : a.isTree ? 0x2f : 0;
  const cb = b.name.length > n ? b.name[n]! : b.isTree ? 0x2f : 0;
  return ca - cb;
}

export interface WalkStats {
  commits: number;
  trees: number;
  blobs: number;
  missing: number;
}

/**
 * `git log --raw -n <commits>` (workload `log-raw`: every tree that differs along first-parent
 * diffs, no blob) or `git log -S<x> --raw` (`log-S`: the same plus both sides of every changed
 * blob), as the seed timed them: commits from HEAD newest first, merges not diffed.
 */
export function logWalk(
  reader: BenchReader,
  head: Buffer,
  commits: number,
  withBlobs: boolean,
): WalkStats {
  const algo = reader.algo;
  const len = algo.len;
  const stats: WalkStats = { commits: 0, trees: 0, blobs: 0, missing: 0 };
  const infos = new Map<string, CommitInfo | undefined>();
  const queue: { id: Buffer; info: CommitInfo }[] = [];
  const readCommit = (id: Buffer): CommitInfo | undefined => {
    const o = reader.read(id);
    if (o === undefined) {
      stats.missing++;
      return undefined;
    }
    return parseCommit(o.data, algo);
  };
  const push = (id: Buffer): void => {
    const k = id.toString('latin1');
    if (infos.has(k)) return;
    const info = readCommit(id);
    infos.set(k, info);
    if (info === undefined) return;
    // Newest first (git's commit date order); a sorted insert keeps this simple and small.
    let lo = 0;
    let hi = queue.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (queue[mid]!.info.time > info.time) lo = mid + 1;
      else hi = mid;
    }
    queue.splice(lo, 0, { id, info });
  };
  const readTree = (id: Buffer): TreeEntry[] => {
    stats.trees++;
    const o = reader.read(id);
    if (o === undefined) {
      stats.missing++;
      return [];
    }
    return parseTree(o.data, len);
  };
  const readBlob = (id: Buffer): void => {
    if (!withBlobs) return;
    stats.blobs++;
    if (reader.read(id) === undefined) stats.missing++;
  };
  const whole = (id: Buffer): void => {
    for (const e of readTree(id)) {
      if (e.isGitlink) continue;
      if (e.isTree) whole(e.id);
      else readBlob(e.id);
    }
  };
  const diff = (a: Buffer | undefined, b: Buffer): void => {
    if (a !== undefined && a.equals(b)) return;
    const ea = a === undefined ? [] : readTree(a);
    const eb = readTree(b);
    let i = 0;
    let k = 0;
    while (i < ea.length || k < eb.length) {
      const x = ea[i];
      const y = eb[k];
      const c = x === undefined ? 1 : y === undefined ? -1 : compareEntries(x, y);
      if (c < 0) {
        if (x!.isTree) whole(x!.id);
        else if (!x!.isGitlink) readBlob(x!.id);
        i++;
      } else if (c > 0) {
        if (y!.isTree) whole(y!.id);
        else if (!y!.isGitlink) readBlob(y!.id);
        k++;
      } else {
        if (!x!.id.equals(y!.id)) {
          if (x!.isTree && y!.isTree) diff(x!.id, y!.id);
          else if (!x!.isGitlink && !y!.isGitlink) {
            readBlob(x!.id);
            readBlob(y!.id);
          }
        }
        i++;
        k++;
      }
    }
  };
  push(head);
  while (queue.length > 0 && stats.commits < commits) {
    const { info } = queue.shift()!;
    stats.commits++;
    for (const p of info.parents) push(Buffer.from(p));
    if (info.parents.length > 1) continue;
    let parentTree: Buffer | undefined;
    if (info.parents.length === 1) {
      parentTree = infos.get(info.parents[0]!.toString('latin1'))?.tree;
    }
    diff(parentTree, info.tree);
  }
  return stats;
}

/** HEAD of a bare repository as an id (following one symbolic ref and packed-refs). */
export function resolveHead(
  gitDir: string,
  algo: HashAlgo,
  readText: (f: string) => string | undefined,
): Buffer | undefined {
  let v = readText(join(gitDir, 'HEAD'))?.trim();
  if (v === undefined) return undefined;
  for (let depth = 0; depth < 5 && v.startsWith('ref: '); depth++) {
    const ref = v.slice(5).trim();
    const loose = readText(join(gitDir, ref))?.trim();
    if (loose !== undefined) {
      v = loose;
      continue;
    }
    const packed = readText(join(gitDir, 'packed-refs')) ?? '';
    const line = packed.split('\n').find((l) => l.endsWith(` ${ref}`));
    if (line === undefined) return undefined;
    v = line.split(' ')[0]!;
  }
  return fromHex(v, algo);
}
