import { constants } from 'node:os';
import { removeRegisteredPaths, writingToChild } from '../cleanup.js';
import { stdoutStreamFailed } from './output.js';

/** The signals git's sigchain_push_common catches to remove its temporary files and locks. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGPIPE'] as const;
type CaughtSignal = (typeof SIGNALS)[number];

/**
 * Removes what the lower layers registered (src/cleanup.ts), then dies of the same signal with
 * its default action, as git's `remove_tempfiles_on_signal` + `sigchain_pop` + `raise` do: the
 * caller sees 130, 143, 129 or 141 exactly as from git.
 */
export function dieOfSignal(sig: CaughtSignal): never {
  // The children get the same signal first and are waited for, as by git's cleanup_children.
  removeRegisteredPaths(sig);
  // With no listener left, Node gives the signal back its default action (SIGPIPE too).
  for (const s of SIGNALS) process.removeAllListeners(s);
  process.kill(process.pid, sig);
  process.exit(128 + constants.signals[sig]); // not reached: the signal's default action ends us
}

/** A child that died of one of our signals: we die of it too (after cleaning up). */
export function isCaughtSignal(sig: string): sig is CaughtSignal {
  return (SIGNALS as readonly string[]).includes(sig);
}

/**
 * Installs the handlers for the bin entry. A closed stdout or stderr (`… | head -1`) is git's
 * SIGPIPE: silent, exit 141, and not Node's "Error: write EPIPE" stack trace.
 */
export function installSignalCleanup(): void {
  // A SIGPIPE while we feed git through a pipe is that pipe's (git stopped reading): the write
  // fails with EPIPE instead, and git's exit says why. Our own stdout and stderr still end us below.
  for (const sig of SIGNALS)
    process.on(sig, () => (sig === 'SIGPIPE' && writingToChild() ? undefined : dieOfSignal(sig)));
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') dieOfSignal('SIGPIPE');
      // stdout's other failures are git's "write failure on standard output" (output.ts); stderr's are ignored, as by git.
      if (stream === process.stdout) stdoutStreamFailed(e);
    });
  }
}
