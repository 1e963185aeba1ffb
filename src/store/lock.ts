import { closeSync, linkSync, openSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { fault, pidAlive, tmpPath, unlinkIfExists } from './files.js';
import { readSmallFile } from './regular.js';
import { adjustSharedPerm } from './shared-perm.js';

const MARK = 'git-repack-ts';
/** git gc's rule: a gc.pid older than 12 hours is stale. */
const GC_PID_STALE_MS = 12 * 3600 * 1000;

/** gc.pid and our lock hold a pid and a host name: git reads gc.pid with a fixed-size fscanf. */
const SMALL_FILE = 4096;

/** A run of ours, as its lock names it. */
export interface LockOwner {
  pid: number;
  host: string;
  /** Random, per run: ties the run's journal to the lock it held (store/journal.ts). */
  nonce: string;
}

export interface RepoLock {
  path: string;
  /** This run. */
  owner: LockOwner;
  /** The killed run of ours whose lock this one took over, if any. */
  previous: LockOwner | undefined;
  release(): void;
}

/** Is this pid, on this host, a run that can no longer be running? Our own pid is another run's only by reuse. */
export function deadHere(pid: number, host: string): boolean {
  return host === hostname() && (pid === process.pid || !pidAlive(pid));
}

/** Refuses while `git gc` holds the repository (git's `lock_repo_for_gc` reads gc.pid the same way). */
function checkGcPid(commonDir: string): void {
  const f = join(commonDir, 'gc.pid');
  // A FIFO or a huge file is no gc.pid (git's fscanf would find nothing in it either).
  const r = readSmallFile(f, SMALL_FILE);
  if (r === undefined || 'why' in r) return;
  const m = /^(\d+) (\S+)/.exec(r.data.toString('latin1'));
  if (!m) return;
  const pid = Number(m[1]);
  const host = m[2]!;
  const fresh = Date.now() - r.st.mtimeMs < GC_PID_STALE_MS;
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
function createWithContent(path: string, text: string, dir: string, shared: number): void {
  const tmp = tmpPath(dir, 'lock');
  try {
    writeFileSync(tmp, text, { flag: 'wx', mode: 0o666 });
    adjustSharedPerm(tmp, shared); // as git's create_tempfile_mode
    linkSync(tmp, path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw e;
    const fd = openSync(path, 'wx', 0o666);
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
    adjustSharedPerm(path, shared);
  } finally {
    unlinkIfExists(tmp);
  }
}

/**
 * Takes `objects/maintenance.lock`, the lock `git maintenance` takes, so neither runs while the
 * other rewrites packs. Our lock names us (pid, host and a nonce); one left by a killed run of
 * ours (dead or zombie pid on this host) is taken over, anything else is refused.
 */
export function acquireRepackLock(commonDir: string, objectsDir: string, shared = 0): RepoLock {
  checkGcPid(commonDir);
  const path = join(objectsDir, 'maintenance.lock');
  const owner: LockOwner = { pid: process.pid, host: hostname(), nonce: randomBytes(16).toString('hex') };
  const text = `${MARK} ${owner.pid} ${owner.host} ${owner.nonce}\n`;
  let previous: LockOwner | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      createWithContent(path, text, objectsDir, shared);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new GitError('io', `unable to create '${path}': ${(e as Error).message}`, { file: path });
      }
      // Read a bounded head, never through a link, never blocking on a FIFO: anything that is
      // not a regular file naming a dead run of ours is someone else's lock.
      const r = readSmallFile(path, SMALL_FILE);
      if (r === undefined) continue;
      const m = 'why' in r ? null : new RegExp(`^${MARK} (\\d+) (\\S+)(?: ([0-9a-f]{32}))?\n`).exec(r.data.toString('latin1'));
      if (m && deadHere(Number(m[1]), m[2]!)) {
        unlinkSync(path); // left by a killed run of ours
        previous = { pid: Number(m[1]), host: m[2]!, nonce: m[3] ?? '' };
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
      owner,
      previous,
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
