import { fstatSync, writeSync } from 'node:fs';
import { isatty } from 'node:tty';
import { strerror } from '../errors.js';
import { encodeEscaped } from '../commands/arg-bytes.js';

/**
 * Standard output as git treats it (git.c's `run_builtin`, write-or-die.c's `maybe_flush_or_die`):
 * a write that fails on a file or a device (ENOSPC on `>/dev/full`, EIO) is fatal, "write failure
 * on standard output: <strerror>" and exit 128; on a pipe or a socket only a reader gone counts,
 * as SIGPIPE (signals.ts). Standard error's failures are ignored, as git ignores them.
 */

/** stdout's first failure, once one happened: later writes are dropped and the run fails. */
let failure: NodeJS.ErrnoException | undefined;

/** A write to stdout failed: what git's `die_errno` prints, by the name the caller gives stdout. */
export class WriteFailure extends Error {
  /** strerror of the failed write. */
  readonly why: string;

  constructor(override readonly cause: NodeJS.ErrnoException) {
    const why = strerror(cause.code ?? 'EIO');
    super(`write failure on standard output: ${why}`);
    this.name = 'WriteFailure';
    this.why = why;
  }

  /** git hash-object's name for it (`maybe_flush_or_die(stdout, "hash to stdout")`). */
  named(desc: string): string {
    return `write failure on '${desc}': ${this.why}`;
  }
}

/** How writes reach fd 1: `sync` for a file or a device (errors known at once), else Node's stream. */
let mode: 'sync' | 'stream' | undefined;

function stdoutMode(): 'sync' | 'stream' {
  if (mode !== undefined) return mode;
  try {
    const st = fstatSync(1);
    // A terminal is a character device too: Node's tty stream keeps its line discipline.
    mode = (st.isFile() || st.isCharacterDevice()) && !isatty(1) ? 'sync' : 'stream';
  } catch {
    mode = 'stream';
  }
  return mode;
}

/** Writes `text` to stdout; throws WriteFailure once a write has failed. */
export function writeStdout(text: string): void {
  if (failure !== undefined) throw new WriteFailure(failure);
  // A name that is not UTF-8 goes out as the bytes it stands for (commands/arg-bytes.ts).
  const buf = encodeEscaped(text);
  if (stdoutMode() === 'stream') {
    process.stdout.write(buf);
    return;
  }
  try {
    for (let at = 0; at < buf.length;) at += writeSync(1, buf, at, buf.length - at);
  } catch (e) {
    failure = e as NodeJS.ErrnoException;
    throw new WriteFailure(failure);
  }
}

/** stdout's stream reported `e` (not EPIPE, which is SIGPIPE): fatal on a terminal, ignored on a pipe or socket, as in git. */
export function stdoutStreamFailed(e: NodeJS.ErrnoException): void {
  let pipe = true;
  try {
    const st = fstatSync(1);
    pipe = st.isFIFO() || st.isSocket();
  } catch {
    // fd 1 closed: git's run_builtin returns quietly
  }
  if (!pipe) failure ??= e;
}

/** The failure a successful run must still report (git.c checks stdout once the command returned 0). */
export function stdoutFailure(): WriteFailure | undefined {
  return failure === undefined ? undefined : new WriteFailure(failure);
}
