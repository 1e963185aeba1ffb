import {
  appendFileSync,
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { constants as osConstants } from 'node:os';
import { getSystemErrorMap } from 'node:util';
import { forgetOnSignal, removeOnSignal } from '../cleanup.js';
import { syncAndClose } from '../format/pack-writer.js';

/** Marks our temporary files (`tmp_pack_rts<pid>_<rand>`): git gc treats `tmp_*` as garbage too. */
export const TMP_TAG = 'rts';

/**
 * Fault injection for the reliability harness (docs/reliability.md). `GIT_REPACK_TS_FAULT` is a
 * comma-separated list of `<point>[:<n>[:<action>]]`: at the n-th (default 1st) time a point whose
 * name matches is reached, the process kills itself (`kill`, the default: SIGKILL), stops itself
 * (`stop`: SIGSTOP, for a test to act and then SIGCONT it), or fails as the system call would
 * (`enospc`, `eio`, `erofs`, `eacces`). `<point>` is a name (`rename`, `unlink`, `fsync`, `write`,
 * `phase:fsck`, …), a prefix ending in `*`, or `*` for any point. `GIT_REPACK_TS_FAULT_TRACE=<file>`
 * appends every point reached to a file. Armed only by the CLI; one comparison when unarmed.
 */
interface FaultRule {
  match: (point: string) => boolean;
  n: number;
  action: string;
  seen: number;
}

let faultRules: FaultRule[] | undefined;
let faultTrace: string | undefined;

/** The failures a fault point can inject, as the system call would report them. */
const ERRNO = new Set(['enospc', 'eio', 'erofs', 'eacces']);

export function armFaults(spec: string | undefined, trace: string | undefined): void {
  faultTrace = trace || undefined;
  faultRules = undefined;
  if (!spec && !faultTrace) return;
  faultRules = [];
  for (const part of (spec ?? '').split(',')) {
    if (part === '') continue;
    // Parsed from the right: the point name may itself contain a colon (`phase:fsck:2:stop`).
    const bits = part.split(':');
    const last = bits[bits.length - 1]!;
    const action =
      bits.length > 1 && (last === 'kill' || last === 'stop' || ERRNO.has(last))
        ? bits.pop()!
        : 'kill';
    const n = bits.length > 1 && /^\d+$/.test(bits[bits.length - 1]!) ? Number(bits.pop()) : 1;
    const point = bits.join(':');
    const match =
      point === '*'
        ? () => true
        : point.endsWith('*')
          ? (p: string) => p.startsWith(point.slice(0, -1))
          : (p: string) => p === point;
    faultRules.push({ match, n: Math.max(1, n), action, seen: 0 });
  }
}

/** A named point where the harness may kill, stop or fail the process (see `armFaults`). */
export function fault(point: string, detail = ''): void {
  if (faultRules === undefined) return;
  if (faultTrace !== undefined) appendFileSync(faultTrace, `${point} ${detail}\n`);
  for (const r of faultRules) {
    if (!r.match(point) || ++r.seen !== r.n) continue;
    if (r.action === 'kill') process.kill(process.pid, 'SIGKILL');
    else if (r.action === 'stop') process.kill(process.pid, 'SIGSTOP');
    else if (ERRNO.has(r.action)) throw systemCallError(r.action.toUpperCase(), point, detail);
  }
}

/**
 * The error Node's fs would throw for `code` at this point: its fields (code, errno, syscall,
 * path) are what is read; the text is Node's own (`uvException`'s shape), for a debugger only.
 */
function systemCallError(code: string, point: string, path: string): NodeJS.ErrnoException {
  const syscall = SYSCALLS.find((s) => point.startsWith(s)) ?? 'open';
  const errno = -(osConstants.errno as Record<string, number>)[code]!;
  const text = getSystemErrorMap().get(errno)?.[1] ?? code;
  const err: NodeJS.ErrnoException = new Error(
    `${code}: ${text}, ${syscall}${path ? ` '${path}'` : ''}`,
  );
  Object.assign(err, { errno, code, syscall }, path ? { path } : {});
  return err;
}

const SYSCALLS = ['write', 'fsync', 'rename', 'unlink', 'link', 'mkdir'];

/** A progress callback whose every report is also a fault point (`progress:<phase>`), as the rewrite's. */
export function withFaultPoints(
  onProgress: ((phase: string, done: number, total: number) => void) | undefined,
): (phase: string, done: number, total: number) => void {
  return (phase, done, total) => {
    fault(`progress:${phase}`, `${done}/${total}`);
    onProgress?.(phase, done, total);
  };
}

export function tmpPath(packDir: string, kind: string): string {
  return removeOnSignal(
    join(packDir, `tmp_${kind}_${TMP_TAG}${process.pid}_${randomBytes(4).toString('hex')}`),
  );
}

/** Pid of the process that made one of our temporary files, or undefined if it is not ours. */
export function tmpOwner(name: string): number | undefined {
  // `tmpPath`'s 8 hex digits, or the 6 characters mkdtemp adds to a view's name.
  const m = new RegExp(`^tmp_[a-z]+_${TMP_TAG}(\\d+)_(?:[0-9a-f]{8}|[0-9A-Za-z]{6}$)`).exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Writes a complete file that nobody else can see yet: exclusive create, write, fsync, close. */
export function writeFileDurable(path: string, data: Uint8Array, mode = 0o444): void {
  writeChunksDurable(path, (write) => write(data), mode);
}

/** The same for content produced piece by piece (`produce` calls `write` for each piece). */
export function writeChunksDurable(
  path: string,
  produce: (write: (chunk: Uint8Array) => void) => void,
  mode = 0o444,
): void {
  const fd = writeChunks(path, produce, mode);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `writeChunksDurable` whose fsync and close go on on libuv's threadpool: the promise resolves
 * once the file is on disk, and must be awaited before the file counts (is renamed into place).
 */
export function writeChunksSyncing(
  path: string,
  produce: (write: (chunk: Uint8Array) => void) => void,
  mode = 0o444,
): Promise<void> {
  return syncAndClose(writeChunks(path, produce, mode));
}

/** Exclusive create and write, up to the fsync (the fault points before it included); the fd is the caller's. */
function writeChunks(
  path: string,
  produce: (write: (chunk: Uint8Array) => void) => void,
  mode: number,
): number {
  fault('create', path);
  const fd = openSync(path, 'wx', mode);
  try {
    fault('write', path);
    produce((data) => {
      let done = 0;
      while (done < data.length) done += writeSync(fd, data, done, data.length - done);
    });
    fault('fsync', path);
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** fsync a directory so that renames and unlinks in it are durable. */
export function fsyncDir(dir: string): void {
  fault('fsync-dir', dir);
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // some filesystems refuse fsync on directories; the rename is as durable as they allow
  } finally {
    closeSync(fd);
  }
}

export function unlinkIfExists(path: string): boolean {
  fault('unlink', path);
  forgetOnSignal(path);
  try {
    unlinkSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

export function renameInto(from: string, to: string): void {
  fault('rename', to);
  renameSync(from, to);
  forgetOnSignal(from);
}

/**
 * Is a process with this pid alive on this machine? A zombie is not: a run killed with its
 * parent stays one where nothing reaps it (a container without an init), yet answers kill(pid, 0).
 */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/** State 'Z' (zombie) or 'X' (dead) in /proc/<pid>/stat; false where there is no /proc. */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false;
  }
  // "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}
