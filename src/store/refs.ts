import { spawnSync } from 'node:child_process';
import { GitError, systemError } from '../errors.js';

/**
 * `<hex> <refname>` lines: the repository's refs (`git for-each-ref`) and HEAD when it resolves
 * (a detached HEAD names an object no ref does). A git that cannot list the refs is an error:
 * an export or a walk without them would silently leave objects out.
 */
export function listRefs(gitDir: string, env: NodeJS.ProcessEnv): string {
  const withDir: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir };
  const r = spawnSync('git', ['for-each-ref', '--format=%(objectname) %(refname)'], {
    env: withDir,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (r.error) throw systemError('io', 'cannot run git for-each-ref', r.error);
  if (r.status !== 0) throw new GitError('io', `git for-each-ref failed: ${r.stderr.trim()}`);
  const head = spawnSync('git', ['rev-parse', '--verify', '-q', 'HEAD'], {
    env: withDir,
    encoding: 'utf8',
  });
  return (
    (head.status === 0 && head.stdout.trim() !== '' ? `${head.stdout.trim()} HEAD\n` : '') +
    r.stdout
  );
}

/** git run on the repository at `gitDir` (no work tree needed for refs). */
function gitAt(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  args: string[],
  input?: string,
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('git', args, {
    env: { ...env, GIT_DIR: gitDir },
    input,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (r.error) throw systemError('io', `cannot run git ${args[0]}`, r.error);
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every ref and the id it resolves to (`git for-each-ref`; HEAD not included). */
export function readRefs(gitDir: string, env: NodeJS.ProcessEnv): Map<string, string> {
  const r = gitAt(gitDir, env, ['for-each-ref', '--format=%(objectname) %(refname)']);
  if (r.status !== 0) throw new GitError('io', `git for-each-ref failed: ${r.stderr.trim()}`);
  const out = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0) out.set(line.slice(sp + 1), line.slice(0, sp));
  }
  return out;
}

/** HEAD: the ref it points at (undefined when detached) and the id it resolves to (undefined when unborn). */
export function readHead(
  gitDir: string,
  env: NodeJS.ProcessEnv,
): { symref: string | undefined; id: string | undefined } {
  const sym = gitAt(gitDir, env, ['symbolic-ref', '-q', 'HEAD']);
  const id = gitAt(gitDir, env, ['rev-parse', '-q', '--verify', 'HEAD']);
  return {
    symref: sym.status === 0 ? sym.stdout.trim() : undefined,
    id: id.status === 0 && id.stdout.trim() !== '' ? id.stdout.trim() : undefined,
  };
}

/**
 * One `git update-ref --stdin` transaction (all or nothing; each old value checked by git under
 * its ref locks). Returns git's complaint when it refused.
 */
export function updateRefs(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  commands: string,
  message: string,
): string | undefined {
  const r = gitAt(gitDir, env, ['update-ref', '-m', message, '--stdin'], commands);
  return r.status === 0 ? undefined : r.stderr.trim() || `git update-ref exited ${r.status}`;
}

/** `git symbolic-ref HEAD <ref>`; git's complaint when it refused. */
export function pointHead(
  gitDir: string,
  env: NodeJS.ProcessEnv,
  ref: string,
  message: string,
): string | undefined {
  const r = gitAt(gitDir, env, ['symbolic-ref', '-m', message, 'HEAD', ref]);
  return r.status === 0 ? undefined : r.stderr.trim() || `git symbolic-ref exited ${r.status}`;
}
