import { closeSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { fault, pidAlive, tmpPath, unlinkIfExists } from './files.js';

const MARK = 'git-repack-ts';
/** git gc's rule: a gc.pid older than 12 hours is stale. */
const GC_PID_STALE_MS = 12 * 3600 * 1000;

export interface RepoLock {
  path: string;
  release(): void;
}

/** Refuses while `git gc` holds the repository (git's `lock_repo_for_gc` reads gc.pid the same way). */
function checkGcPid(commonDir: string): void {
  const f = join(commonDir, 'gc.pid');
  let text: string;
  let mtime: number;
  try {
    text = readFileSync(f, 'utf8');
    mtime = statSync(f).mtimeMs;
  } catch {
    return;
  }
  const m = /^(\d+) (\S+)/.exec(text);
  if (!m) return;
  const pid = Number(m[1]);
  const host = m[2]!;
  const fresh = Date.now() - mtime < GC_PID_STALE_MS;
  const running = host === hostname() ? pidAlive(pid) : fresh;
  if (running) {
    throw new GitError('locked', `gc is already running on machine '${host}' pid ${pid} (${f}); not repacking now`);
  }
}

/**
 * Creates `path` holding `text`, atomically: the text goes to a temporary file that is then
 * hard-linked into place (link fails with EEXIST like an exclusive create). A run killed midway
 * never leaves an empty lock, which could not be told apart from git maintenance's own (empty)
 * lock and would block every later run. Where hard links are refused, an exclusive create.
 */
function createWithContent(path: string, text: string, dir: string): void {
  const tmp = tmpPath(dir, 'lock');
  try {
    writeFileSync(tmp, text, { flag: 'wx', mode: 0o644 });
    linkSync(tmp, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw e;
    const fd = openSync(path, 'wx', 0o644);
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
  } finally {
    unlinkIfExists(tmp);
  }
}

/**
 * Takes `objects/maintenance.lock`, the lock `git maintenance` takes, so neither runs while the
 * other rewrites packs. Our lock names us; one left by a killed run of ours (dead pid on this
 * host) is taken over, anything else is refused.
 */
export function acquireRepackLock(commonDir: string, objectsDir: string): RepoLock {
  checkGcPid(commonDir);
  const path = join(objectsDir, 'maintenance.lock');
  const text = `${MARK} ${process.pid} ${hostname()}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      createWithContent(path, text, objectsDir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new GitError('io', `unable to create '${path}': ${(e as Error).message}`, { file: path });
      }
      let owner = '';
      try {
        owner = readFileSync(path, 'utf8');
      } catch {
        continue;
      }
      const m = new RegExp(`^${MARK} (\\d+) (\\S+)`).exec(owner);
      if (m && m[2] === hostname() && !pidAlive(Number(m[1]))) {
        unlinkSync(path); // left by a killed run of ours
        continue;
      }
      throw new GitError(
        'locked',
        `unable to create '${path}': File exists.\n\nAnother git process seems to be running in this repository (git maintenance, git gc or\nanother git repack-ts); wait for it to finish. If it crashed, remove the file and try again.`,
        { file: path },
      );
    }
    fault('phase:locked', path);
    let released = false;
    return {
      path,
      release: () => {
        if (released) return;
        released = true;
        try {
          unlinkSync(path);
        } catch {
          // already gone
        }
      },
    };
  }
  throw new GitError('locked', `unable to take ${path}`, { file: path });
}
