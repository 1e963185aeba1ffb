import { closeSync, linkSync, openSync, readdirSync, writeFileSync, writeSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { GitError, systemError } from '../errors.js';
import { fault, pidAlive, renameInto, tmpPath, unlinkIfExists } from './files.js';
import { journalNonce } from './journal.js';
import { readSmallFile } from './regular.js';
import { adjustSharedPerm } from './shared-perm.js';

const MARK = 'git-repack-ts';
const LOCK = 'maintenance.lock';
/** Our line in a lock or a takeover marker: pid, host, nonce, the journal taken over with it; older builds wrote no nonce. */
const OWNER_LINE = new RegExp(`^${MARK} (\\d+) (\\S+)(?: ([0-9a-f]{32})(?: ([0-9a-f]{32}))?)?\n`);
/** `maintenance.lock.<key>`: the marker of a takeover of the lock (or of a marker) whose key it is. */
const MARKER = /^maintenance\.lock\.[0-9a-f]{32}$/;
/** Takeovers a takeover may have to take over in turn, each left by a contender killed in the act. */
const MAX_DEPTH = 4;
/** git gc's rule: a gc.pid older than 12 hours is stale. */
const GC_PID_STALE_MS = 12 * 3600 * 1000;

/** gc.pid and our lock hold a pid and a host name: git reads gc.pid with a fixed-size fscanf. */
const SMALL_FILE = 4096;

/** A run of ours, as its lock names it. */
export interface LockOwner {
  pid: number;
  host: string;
  /** Random, per run: ties the run's journal to the lock it held (store/journal.ts); '' in a lock of an older build. */
  nonce: string;
  /**
   * The nonce of the journal this run found tied to the lock it took over, until it adopts it: a
   * kill before the adoption leaves the journal tied to this run's lock all the same.
   */
  pending?: string | undefined;
}

export interface RepoLock {
  path: string;
  /** This run. */
  owner: LockOwner;
  /** The killed run of ours whose lock this one took over, if any. */
  previous: LockOwner | undefined;
  /**
   * Lets the lock go, unless the install journal needs it (`letGo`): returns true when a lock
   * stays in place for the next run.
   */
  release(): boolean;
}

/**
 * The nonces of the locks this process holds now. A lock naming our own pid is another run's only
 * by pid reuse, or an earlier run of this process (library use): live only if it is one of these.
 */
const heldHere = new Set<string>();

/** Is the run `o` names gone for good: dead or a zombie on this host, or a run of this process that is over? */
function ownerGone(o: LockOwner): boolean {
  if (o.host !== hostname()) return false;
  return o.pid === process.pid ? !heldHere.has(o.nonce) : !pidAlive(o.pid);
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
    throw new GitError(
      'locked',
      `gc is already running on machine '${host}' pid ${pid} (${f}); not repacking now`,
    );
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
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV')
      throw e;
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

/** Where a lock is taken: the object directory, the lock's path, our line (`lineOf`), core.sharedRepository. */
interface Ctx {
  dir: string;
  lock: string;
  line: string;
  shared: number;
}

/** A lock or marker naming a gone run of ours: who, its bytes, and the key of the marker that guards its takeover. */
interface Gone {
  owner: LockOwner;
  data: Buffer;
  key: string;
}

function lineOf(o: LockOwner): string {
  return `${MARK} ${o.pid} ${o.host} ${o.nonce}${o.pending === undefined ? '' : ` ${o.pending}`}\n`;
}

/** Creates `path` holding our line; false when it exists. */
function create(path: string, ctx: Ctx): boolean {
  try {
    createWithContent(path, ctx.line, ctx.dir, ctx.shared);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw systemError('io', 'unable to create', e, path);
  }
}

/**
 * What a lock or marker file names: a gone run of ours, `busy` for anything else (a live run, git
 * maintenance's empty lock, a FIFO, a link, a file that is not ours), undefined when it is gone.
 * A bounded head is read, never through a link, never blocking on a FIFO.
 */
function readGone(path: string): Gone | 'busy' | undefined {
  const r = readSmallFile(path, SMALL_FILE);
  if (r === undefined) return undefined;
  const m = 'why' in r ? null : OWNER_LINE.exec(r.data.toString('latin1'));
  if (m === null || 'why' in r) return 'busy';
  const owner = { pid: Number(m[1]), host: m[2]!, nonce: m[3] ?? '', pending: m[4] };
  if (!ownerGone(owner)) return 'busy';
  // An older lock has no nonce: its bytes name its takeover instead.
  const key = owner.nonce || createHash('sha256').update(r.data).digest('hex').slice(0, 32);
  return { owner, data: r.data, key };
}

/** The refusal of a lock someone holds, in git's words (lockfile.c's `unable_to_lock_message`). */
function busy(path: string): GitError {
  return new GitError(
    'locked',
    `unable to create '${path}': File exists.\n\nAnother git process seems to be running in this repository (git maintenance, git gc or\nanother git repack-ts); wait for it to finish. If it crashed, remove the file and try again.`,
    { file: path },
  );
}

/** Renames a file holding our line over `target`: it never stops existing, as git's commit_lock_file. */
function replaceWith(target: string, ctx: Ctx): void {
  const tmp = tmpPath(ctx.dir, 'lock');
  try {
    writeFileSync(tmp, ctx.line, { flag: 'wx', mode: 0o666 });
    adjustSharedPerm(tmp, ctx.shared);
    renameInto(tmp, target);
  } finally {
    unlinkIfExists(tmp);
  }
}

/**
 * Puts our line in place of `target` (the lock, or a marker guarding one), which names the gone
 * run `stale`. Reading a stale lock, then replacing it, is not atomic: two runs that read it
 * together would both replace it (both held the lock in 3 of 30 tries, issue 30). So, as git's
 * `lock_repo_for_gc` rewrites gc.pid only under `gc.pid.lock`, only the contender that creates
 * `maintenance.lock.<key>` (a link: EEXIST for every other, who refuses as if the lock were live)
 * may replace it, and under that marker it checks that `target` still holds the bytes it read: a
 * contender that gets the marker after the winner removed it finds the winner's line and refuses.
 */
function takeOver(target: string, stale: Gone, ctx: Ctx, depth: number): void {
  const marker = `${ctx.lock}.${stale.key}`;
  claim(marker, ctx, depth);
  try {
    const now = readSmallFile(target, SMALL_FILE);
    if (now === undefined || 'why' in now || !now.data.equals(stale.data)) throw busy(ctx.lock);
    replaceWith(target, ctx);
  } finally {
    unlinkIfExists(marker);
  }
}

/** Creates `marker`, or takes it over from a contender killed holding it (it names a gone run too); throws `busy` otherwise. */
function claim(marker: string, ctx: Ctx, depth: number): void {
  if (create(marker, ctx)) return;
  const holder = depth < MAX_DEPTH ? readGone(marker) : 'busy';
  if (holder === undefined || holder === 'busy') throw busy(ctx.lock);
  takeOver(marker, holder, ctx, depth + 1);
}

/**
 * Markers left by contenders killed between their rename and their unlink: once we hold the lock,
 * any that names a gone run guards nothing (its key is a lock that is no longer there).
 */
function sweepMarkers(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    if (!MARKER.test(n)) continue;
    const g = readGone(join(dir, n));
    if (g !== undefined && g !== 'busy') bestEffort(() => unlinkIfExists(join(dir, n)));
  }
}

/**
 * Lets the lock go, unless the install journal needs it (store/journal.ts acts on a journal only
 * for the run whose lock it took over): a journal of this run, or the one it took over with the
 * lock and has not adopted yet (a run that does not recover journals, or a recovery that failed
 * first), keeps this lock in place for the next run to take over and finish. Only a lock still
 * holding our line is touched. True when a lock stays.
 */
function letGo(ctx: Ctx, owner: LockOwner): boolean {
  const now = readSmallFile(ctx.lock, SMALL_FILE);
  if (now === undefined || 'why' in now || !now.data.equals(Buffer.from(ctx.line))) return false;
  const tie = journalNonce(ctx.dir);
  if (tie !== undefined && (tie === owner.nonce || tie === owner.pending)) return true;
  unlinkIfExists(ctx.lock);
  return false;
}

/**
 * Takes `objects/maintenance.lock`, the lock `git maintenance` takes, so neither runs while the
 * other rewrites packs. Our lock names us (pid, host and a nonce); one left by a run of ours that
 * is gone (`ownerGone`) is taken over (`takeOver`: one winner among any number of contenders),
 * anything else is refused.
 */
export function acquireRepackLock(commonDir: string, objectsDir: string, shared = 0): RepoLock {
  checkGcPid(commonDir);
  const path = join(objectsDir, LOCK);
  const owner: LockOwner = {
    pid: process.pid,
    host: hostname(),
    nonce: randomBytes(16).toString('hex'),
  };
  const ctx: Ctx = { dir: objectsDir, lock: path, line: lineOf(owner), shared };
  let previous: LockOwner | undefined;
  for (let attempt = 0; !create(path, ctx); attempt++) {
    const stale = readGone(path);
    if (stale === undefined && attempt < 2) continue; // released meanwhile
    if (stale === undefined || stale === 'busy') throw busy(path);
    // The journal tied to the lock we take over stays tied to ours until we adopt it.
    const tie = journalNonce(objectsDir);
    if (tie !== undefined && (tie === stale.owner.nonce || tie === stale.owner.pending))
      ctx.line = lineOf(Object.assign(owner, { pending: tie }));
    takeOver(path, stale, ctx, 0);
    previous = stale.owner;
    break;
  }
  heldHere.add(owner.nonce);
  fault('phase:locked', path);
  sweepMarkers(objectsDir);
  let released = false;
  let stays = false;
  return {
    path,
    owner,
    previous,
    release: () => {
      if (released) return stays;
      released = true;
      heldHere.delete(owner.nonce);
      try {
        stays = letGo(ctx, owner);
      } catch {
        // the lock stays, as after a kill: the next run takes it over
        stays = true;
      }
      return stays;
    },
  };
}

function bestEffort(f: () => unknown): void {
  try {
    f();
  } catch {
    // left for the next run that holds the lock
  }
}
