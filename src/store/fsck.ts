import { spawnSync } from 'node:child_process';

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
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
}
