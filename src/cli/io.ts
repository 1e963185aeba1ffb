import { GitError, strerror, unwrappedSystemError } from '../errors.js';
import { KilledBySignal } from '../cleanup.js';
import { armFaults } from '../store/files.js';
import { dieOfSignal, isCaughtSignal } from './signals.js';
import { WriteFailure, writeStdout } from './output.js';
import { currentDirectoryString } from './argv.js';
import { encodeEscaped, hasEscapedBytes } from '../commands/arg-bytes.js';

/** The process boundary: the only module that writes to stdout/stderr or sets the exit code. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
  stderrIsTty: boolean;
  /** geteuid(), for the ownership check of repository discovery (absent: no check). */
  euid?: number | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function processIo(): Io {
  // The reliability harness's fault injection (docs/reliability.md); inert when unset.
  armFaults(process.env.GIT_REPACK_TS_FAULT, process.env.GIT_REPACK_TS_FAULT_TRACE);
  return {
    out: writeStdout,
    err: (t) => void process.stderr.write(hasEscapedBytes(t) ? encodeEscaped(t) : t),
    stderrIsTty: process.stderr.isTTY === true,
    euid: process.geteuid?.(),
    env: process.env,
    // Read when needed: `-C /abs` works from a directory that is gone, as in git.
    get cwd() {
      return currentDirectory();
    },
  };
}

/** strbuf_getcwd, as setup_git_directory dies of it: a directory removed under us has no name. */
function currentDirectory(): string {
  try {
    return currentDirectoryString();
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).code ?? 'ENOENT';
    throw new GitError('io', `Unable to read current working directory: ${strerror(errno)}`, {
      errno,
      syscall: 'getcwd',
      cause: e,
    });
  }
}

/** Usage errors exit 129 with the usage text, like git's parse-options. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
    /** Where git prints the usage after the error: parse-options gives none after a bad value, stdout after an ambiguous prefix. */
    readonly usageTo: 'stderr' | 'stdout' | 'none' = 'stderr',
  ) {
    super(message);
  }
}

/** `-h`: the option list on stdout, exit 129, as parse-options' `usage_with_options` prints it. */
export class HelpRequested extends UsageError {
  constructor(usage: string) {
    super('', usage);
  }
}

/** `<command> --help`: the manual page, as `git help` shows it. */
export class ManPageRequested extends Error {
  constructor(readonly usage: string) {
    super('--help');
  }
}

/**
 * Turns a thrown error into git's report and exit code: the one place that writes `fatal: `.
 * Messages are made from the errors' fields where they are made; nothing here reads them back.
 */
export function reportError(io: Io, thrown: unknown): number {
  const e = unwrappedSystemError(thrown); // a system error no command named: `<syscall> '<path>': <strerror>`
  if (e instanceof HelpRequested) {
    // parse-options' usage_with_options exits 129 at once: a stdout that fails is not reported.
    try {
      io.out(e.usage.endsWith('\n') ? e.usage : e.usage + '\n');
    } catch (w) {
      if (!(w instanceof WriteFailure)) throw w;
    }
    return 129;
  }
  if (e instanceof WriteFailure) {
    io.err(`fatal: ${e.message}\n`);
    return 128;
  }
  if (e instanceof UsageError) {
    if (e.message) io.err(`error: ${e.message}\n`);
    const usage = e.usage.endsWith('\n') ? e.usage : e.usage + '\n';
    if (e.usageTo === 'stderr') io.err(usage);
    else if (e.usageTo === 'stdout') {
      try {
        io.out(usage);
      } catch (w) {
        if (!(w instanceof WriteFailure)) throw w;
      }
    }
    return 129;
  }
  if (e instanceof GitError) {
    if (e.code === 'usage') {
      io.err(`error: ${e.message}\n`);
      return 129;
    }
    io.err(`fatal: ${e.message}\n`);
    return 128;
  }
  if (e instanceof KilledBySignal) {
    if (isCaughtSignal(e.signal) && io.env === process.env) dieOfSignal(e.signal);
    io.err(`fatal: ${e.message}\n`);
    return 128;
  }
  if (e instanceof Error && e.name === 'AbortError') {
    io.err('fatal: interrupted\n');
    return 130;
  }
  // A bug, not bad input: still no stack trace on the user's terminal unless asked for.
  io.err(`fatal: internal error: ${(e as Error)?.message ?? String(e)}\n`);
  if (process.env.GIT_REPACK_TS_DEBUG) io.err(`${(e as Error)?.stack ?? ''}\n`);
  return 128;
}
