import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { GitRepackError, unwrappedSystemError } from '../errors.js';
import { discoverRepository, type Repository } from '../store/repo.js';

/**
 * What the library API shares: opening the repository a caller names, turning whatever a command
 * throws into the one exported error class, and handing back plain data.
 */

/** Progress of a phase: `done` of `total` units (`total` 0 when unknown). */
export type ProgressCallback = (phase: string, done: number, total: number) => void;

/**
 * Variables that would make discovery look somewhere other than the path the caller gave (a
 * script run from a git hook inherits GIT_DIR): the path wins, as `git -C <path>` cannot promise.
 */
const REDIRECTS = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
];

/** The environment the API runs git and reads config with: the process's, less the redirects. */
export function apiEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of REDIRECTS) delete env[k];
  return env;
}

/**
 * The repository at or above `path`, found as `git -C <path>` finds it. A path that is not a
 * directory is an error rather than a start for the walk up (a mistyped path must not select
 * the repository around it).
 */
export function repositoryAt(path: string): Repository {
  // git's safe.directory rule, as for the command (CVE-2022-24765): another user's repository is refused.
  return discoverRepository({ cwd: directoryAt(path), env: apiEnv(), euid: callerEuid() });
}

/** geteuid(), for git's ownership check; a platform without one (Windows) reports owner 0 for every file. */
export function callerEuid(): number {
  return process.geteuid?.() ?? 0;
}

/** `path` made absolute; it must be a directory (where `git -C <path>` could go). */
export function directoryAt(path: string): string {
  if (typeof path !== 'string' || path === '')
    throw new GitRepackError('usage', 'a repository path is required');
  const dir = resolve(path);
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() !== true) {
    throw new GitRepackError('not-a-repository', `cannot change to '${path}': No such directory`, {
      file: dir,
    });
  }
  return dir;
}

/** Rejects option names the function does not know (a misspelt option would otherwise do nothing). */
export function checkOptions(options: object, known: readonly string[], fn: string): void {
  if (options === null || typeof options !== 'object')
    throw new GitRepackError('usage', `${fn}: options must be an object`);
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw new GitRepackError('usage', `${fn}: unknown option '${k}'`);
  }
}

/** Any error a command throws, as the API's error class (the cause keeps the original). */
export function apiError(e: unknown, signal?: AbortSignal): GitRepackError {
  if (e instanceof GitRepackError) return e;
  const err = e as NodeJS.ErrnoException;
  if (signal?.aborted === true && e === signal.reason)
    return new GitRepackError('aborted', err instanceof Error ? err.message : 'aborted', {
      cause: e,
    });
  if (err instanceof Error && err.name === 'AbortError')
    return new GitRepackError('aborted', err.message, { cause: e });
  const sys = unwrappedSystemError(e); // `<syscall> '<path>': <strerror>`, the fields kept
  if (sys instanceof GitRepackError) return sys;
  // A delegated `git hash-object` that failed, or a bug: still one class for the caller to catch.
  const message = err instanceof Error ? err.message : String(e);
  return new GitRepackError(
    err instanceof Error && err.name === 'DelegatedGitFailed' ? 'io' : 'internal',
    message,
    { cause: e },
  );
}

/**
 * Runs one API call: the signal checked first, errors made GitRepackError, and the result made
 * exactly the data `--json` prints (keys whose value is undefined are absent, as in the JSON).
 */
export async function apiCall<T>(
  signal: AbortSignal | undefined,
  run: () => Promise<T> | T,
): Promise<T> {
  try {
    signal?.throwIfAborted();
    return JSON.parse(JSON.stringify(await run())) as T;
  } catch (e) {
    throw apiError(e, signal);
  }
}
