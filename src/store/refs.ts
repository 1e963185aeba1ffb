import { spawnSync } from 'node:child_process';
import { GitError } from '../errors.js';

/**
 * `<hex> <refname>` lines: the repository's refs (`git for-each-ref`) and HEAD when it resolves
 * (a detached HEAD names an object no ref does). A git that cannot list the refs is an error:
 * an export or a walk without them would silently leave objects out.
 */
export function listRefs(gitDir: string, env: NodeJS.ProcessEnv): string {
  const withDir: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir };
  const r = spawnSync('git', ['for-each-ref', '--format=%(objectname) %(refname)'], { env: withDir, encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new GitError('io', `git for-each-ref failed: ${(r.stderr ?? r.error?.message ?? '').trim()}`);
  const head = spawnSync('git', ['rev-parse', '--verify', '-q', 'HEAD'], { env: withDir, encoding: 'utf8' });
  return (head.status === 0 && head.stdout.trim() !== '' ? `${head.stdout.trim()} HEAD\n` : '') + r.stdout;
}
