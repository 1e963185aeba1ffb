import { readFileSync, rmSync } from 'node:fs';

/**
 * What to remove when the process dies by a signal, like the lists of git's tempfile.c and
 * lockfile.c that its sigchain handler walks: temporary files, the fsck view, the lock we hold.
 * Lower layers register paths here; cli/ installs the handlers (src/cli/signals.ts), removes what
 * is registered and re-raises the signal. A run that ends normally removes its own files.
 * The install journal is never registered: once written, the next run needs it to finish or roll
 * back the install, and the lock it is tied to with it (`guardLock`).
 */
const registered = new Map<string, (() => unknown) | undefined>();

/** Removes `path` (file or directory) if the process is killed by a signal; returns it. */
export function removeOnSignal<T extends string>(path: T): T {
  registered.set(path, undefined);
  return path;
}

/** `path` was renamed into place or removed: a signal must leave it alone now. */
export function forgetOnSignal(path: string): void {
  registered.delete(path);
}

/**
 * A lock that is let go on a signal while held, like git's `lock_file`: by its own `release`,
 * which leaves it in place while an install journal needs it (store/lock.ts `letGo`).
 */
export function guardLock<L extends { path: string; release(): boolean }>(lock: L): L {
  const release = lock.release.bind(lock);
  lock.release = () => {
    forgetOnSignal(lock.path);
    return release();
  };
  registered.set(lock.path, () => lock.release());
  return lock;
}

/**
 * A child (git fsck, say) died of a signal: like git's `wait_or_whine`, the run stops there; cli/
 * then dies of the same signal when it is one it catches (the terminal sent it to us too).
 */
export class KilledBySignal extends Error {
  constructor(
    readonly command: string,
    readonly signal: NodeJS.Signals,
  ) {
    super(`${command} died of signal ${signal}`);
    this.name = 'KilledBySignal';
  }
}

/** Pipes we are writing into a child through (git index-pack --stdin): while one is open, a SIGPIPE is theirs. */
let childPipes = 0;

/**
 * A pipe into a child is open until `closed` is called: a SIGPIPE meanwhile comes from writing
 * into it after the child stopped reading (cli/ then ignores it, as git ignores SIGPIPE while it
 * feeds a child, and the child's exit says what went wrong). Call `closed` once.
 */
export function pipeToChild(): () => void {
  childPipes++;
  let open = true;
  return () => {
    if (open) childPipes--;
    open = false;
  };
}

/** Is a pipe into a child open (`pipeToChild`)? */
export function writingToChild(): boolean {
  return childPipes > 0;
}

/** Children still writing into what is registered (git index-pack into the check's directory). */
const children = new Set<{ kill(signal?: NodeJS.Signals): boolean; pid?: number | undefined }>();

/** Has process `pid` ended (a zombie not yet reaped counts: the event loop that reaps it is not running)? */
function ended(pid: number | undefined): boolean {
  if (pid === undefined) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/** Waits, from a signal handler (no event loop), up to `ms` for every registered child to end. */
function waitForChildren(ms: number): boolean {
  const deadline = Date.now() + ms;
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    if ([...children].every((c) => ended(c.pid))) return true;
    if (Date.now() >= deadline) return false;
    Atomics.wait(nap, 0, 0, 5);
  }
}

/**
 * Ends `child` before the registered paths are removed on a signal: a child still writing into a
 * directory being removed could leave a file in it, and so the directory behind.
 */
export function killOnSignal<
  C extends {
    kill(signal?: NodeJS.Signals): boolean;
    pid?: number | undefined;
    once(event: 'exit', f: () => void): unknown;
  },
>(child: C): C {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/**
 * Passes `signal` on to the registered children and waits for them to end (SIGKILL after 2 s),
 * as git's `cleanup_children` does for a signal; then removes everything registered, newest
 * first (the lock, taken first, is let go last). Best effort.
 */
export function removeRegisteredPaths(signal: NodeJS.Signals = 'SIGKILL'): void {
  for (const c of children) {
    try {
      c.kill(signal);
    } catch {
      // gone already
    }
  }
  if (!waitForChildren(2000)) for (const c of children) c.kill('SIGKILL');
  waitForChildren(2000);
  children.clear();
  for (const [p, letGo] of [...registered].reverse()) {
    try {
      if (letGo !== undefined) letGo();
      else rmSync(p, { recursive: true, force: true });
    } catch {
      // as git's remove_tempfiles_on_signal: nothing more can be done from here
    }
  }
  registered.clear();
}
