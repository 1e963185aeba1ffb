import { spawnSync } from 'node:child_process';
import { KilledBySignal } from '../cleanup.js';

export type FsckMode = 'full' | 'connectivity' | 'none';

/**
 * Runs `git fsck` on the repository as seen through `objectsDir` (our view of the state after the
 * rewrite). Returns git's output when it finds a problem.
 */
export function runGitFsck(
  gitDir: string,
  objectsDir: string,
  mode: FsckMode,
  env: NodeJS.ProcessEnv,
  opts: { assumePromisor?: boolean } = {},
): { ok: boolean; output: string } {
  if (mode === 'none') return { ok: true, output: '' };
  // A partial clone copied without its config (as public snapshots are) has promisor packs but no
  // promisor remote; git would call every promised object missing. Name a promisor remote for fsck.
  const args = opts.assumePromisor ? ['-c', 'remote.repack-ts-promisor.promisor=true', 'fsck'] : ['fsck'];
  args.push('--no-dangling', '--no-progress');
  if (mode === 'connectivity') args.push('--connectivity-only');
  const childEnv: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir, GIT_OBJECT_DIRECTORY: objectsDir };
  delete childEnv.GIT_WORK_TREE;
  delete childEnv.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  const r = spawnSync('git', args, { env: childEnv, cwd: gitDir, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.error) return { ok: false, output: `cannot run git fsck: ${r.error.message}` };
  if (r.signal !== null) throw new KilledBySignal('git fsck', r.signal);
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

/** The complaints of git fsck that name a missing object, and where the id is in each. */
function missingObjectPatterns(hexLen: number): RegExp[] {
  const id = `([0-9a-f]{${hexLen}})`;
  const type = '(?:commit|tree|blob|tag)';
  return [
    new RegExp(`^missing ${type} ${id}$`),
    new RegExp(`^broken link from\\s+${type} ${id}$`),
    new RegExp(`^to\\s+${type} ${id}$`),
    new RegExp(`^error: \\S+: invalid sha1 pointer ${id}$`),
    new RegExp(`^error: \\S+: invalid reflog entry ${id}$`),
    new RegExp(`^error: ${id}: invalid sha1 pointer in cache-tree$`),
  ];
}

/**
 * Is everything git fsck complained about an object written after we listed the repository (a
 * commit made while fsck ran: fsck enumerates objects, then reads refs that name newer ones)? Only
 * when every line is a missing-object complaint, no id is one we listed (`listed`), and every id
 * exists in the repository now. Such complaints are not a consequence of the rewrite, which
 * removes nothing it did not list. Anything else, or any doubt, is a real problem.
 */
export function onlyObjectsWrittenMeanwhile(output: string, hexLen: number, listed: (hex: string) => boolean, gitDir: string, env: NodeJS.ProcessEnv): boolean {
  const patterns = missingObjectPatterns(hexLen);
  const ids = new Set<string>();
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const m = patterns.map((p) => p.exec(line)).find((x) => x !== null);
    if (!m) return false;
    ids.add(m[1]!);
  }
  if (ids.size === 0) return false;
  for (const id of ids) if (listed(id)) return false;
  const childEnv: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir };
  delete childEnv.GIT_OBJECT_DIRECTORY;
  const r = spawnSync('git', ['cat-file', '--batch-check=%(objectname)'], { env: childEnv, cwd: gitDir, input: [...ids].join('\n') + '\n', encoding: 'utf8' });
  if (r.status !== 0) return false;
  const present = new Set(r.stdout.split('\n').filter((l) => /^[0-9a-f]+$/.test(l)));
  return [...ids].every((id) => present.has(id));
}
