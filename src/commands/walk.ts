import { spawnSync } from 'node:child_process';
import { GitError } from '../errors.js';
import { fromHex, type HashAlgo } from '../hash/algo.js';
import { OidTable } from '../hash/oid-table.js';
import { OBJ_BLOB, OBJ_COMMIT, OBJ_TAG, OBJ_TREE, typeFromName } from '../format/object-type.js';
import type { ObjectDatabase } from '../store/odb.js';

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

/** `<hex> <refname>` lines: the repository's refs and HEAD, or a zstd pack's refs section. */
export function repositoryRefs(gitDir: string): string {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_DIR: gitDir };
  const r = spawnSync('git', ['for-each-ref', '--format=%(objectname) %(refname)'], { env, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new GitError('io', `git for-each-ref failed: ${r.stderr.trim()}`);
  const head = spawnSync('git', ['rev-parse', '--verify', '-q', 'HEAD'], { env, encoding: 'utf8' });
  return (head.status === 0 ? `${head.stdout.trim()} HEAD\n` : '') + r.stdout;
}

/**
 * Every object reachable from the refs, read through our reader: the equivalent of
 * `git rev-list --objects --all` (commits and trees are read and parsed, blobs only named unless
 * `readBlobs`). An explicit queue, ids as bytes, a visited table over id bytes.
 */
export function walkObjects(odb: ObjectDatabase, algo: HashAlgo, refs: string, opts: { readBlobs?: boolean } = {}): WalkResult {
  const t0 = performance.now();
  const len = algo.len;
  const seen = new OidTable(len, 1 << 16);
  const res: WalkResult = { commits: 0, trees: 0, blobs: 0, tags: 0, missing: 0, bytesRead: 0, ms: 0 };
  // queue of (id, type hint); 0 = unknown (refs)
  const queue: { id: Buffer; type: number }[] = [];
  const push = (buf: Uint8Array, pos: number, type: number): void => {
    if (seen.insert(buf, pos) < 0) return;
    queue.push({ id: Buffer.from(buf.subarray(pos, pos + len)), type });
  };
  for (const line of refs.split('\n')) {
    const hex = line.split(' ')[0];
    if (!hex) continue;
    const id = fromHex(hex, algo);
    if (id) push(id, 0, 0);
  }
  const hexLen = len * 2;
  while (queue.length > 0) {
    const { id, type } = queue.pop()!;
    const where = odb.locate(id);
    if (where === undefined) {
      res.missing++;
      continue;
    }
    if (type === OBJ_BLOB && !opts.readBlobs) {
      res.blobs++;
      continue;
    }
    const obj = odb.readAt(where);
    res.bytesRead += obj.data.length;
    const d = obj.data;
    if (obj.type === OBJ_COMMIT) {
      res.commits++;
      // "tree <hex>\n" then "parent <hex>\n"...
      let p = 0;
      while (p < d.length && d[p] !== 0x0a) {
        const eol = d.indexOf(0x0a, p);
        const end = eol < 0 ? d.length : eol;
        if (d[p] === 0x74 && d.toString('latin1', p, p + 5) === 'tree ') push(fromHex(d.toString('latin1', p + 5, p + 5 + hexLen), algo) ?? Buffer.alloc(len), 0, OBJ_TREE);
        else if (d[p] === 0x70 && d.toString('latin1', p, p + 7) === 'parent ') push(fromHex(d.toString('latin1', p + 7, p + 7 + hexLen), algo) ?? Buffer.alloc(len), 0, OBJ_COMMIT);
        else break;
        p = end + 1;
      }
    } else if (obj.type === OBJ_TREE) {
      res.trees++;
      // "<mode> <name>\0<id>"...
      let p = 0;
      while (p < d.length) {
        const sp = d.indexOf(0x20, p);
        const nul = d.indexOf(0, sp);
        if (sp < 0 || nul < 0 || nul + 1 + len > d.length) throw new GitError('bad-object', `malformed tree ${id.toString('hex')}`);
        const isTree = nul - p > 0 && d[p] === 0x34 && sp - p === 5; // "40000"
        const isGitlink = sp - p === 6 && d.toString('latin1', p, sp) === '160000';
        if (!isGitlink) push(d, nul + 1, isTree ? OBJ_TREE : OBJ_BLOB);
        p = nul + 1 + len;
      }
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
