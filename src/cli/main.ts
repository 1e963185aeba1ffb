import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { GitError, strerror } from '../errors.js';
import { fileURLToPath } from 'node:url';
import {
  HelpRequested,
  type Io,
  ManPageRequested,
  UsageError,
  processIo,
  reportError,
} from './io.js';
import { installSignalCleanup } from './signals.js';
import { stdoutFailure } from './output.js';
import { directoryString, rawArguments } from './argv.js';
import { encodeEscaped, fsPath, hasEscapedBytes } from '../commands/arg-bytes.js';
import { disableZstd, onlyZstd } from '../codec/zstd.js';

/** What every subcommand gets: where to run and the process boundary. */
export interface CliContext {
  io: Io;
  /** After all `-C` options. */
  cwd: string;
  /** `--git-dir`, if given (GIT_DIR is read from io.env by discovery). */
  gitDir: string | undefined;
}

export const MAIN_USAGE = `usage: git repack-ts [-C <path>] [--git-dir=<path>] [<repack-options>]
   or: git repack-ts --zstd[=<level>] -o <file> [--dict-size=<bytes> | --no-dict]
   or: git repack-ts verify [-v | --verbose] [-s | --stat-only] [--json] [--object-format=<hash>] [--] [<pack>...]
   or: git repack-ts inspect [--json]
   or: git repack-ts hash-object [-t <type>] [-w] [--path=<file> | --no-filters] [--stdin [--literally]] [--] <file>...
   or: git repack-ts hash-object [-t <type>] [-w] --stdin-paths [--no-filters]
   or: git repack-ts bench [--scenarios=<list>] [--runs=<n>] [--cold] [--clock=(cpu|wall)] [--commands=<list>] [--paths=<p>[,<p2>]] [--log-n=<n>] [--min-time=<seconds>] [--reader[=<list>]] [--reader-commits=<n>] [--reader-rounds=<n>] [--reader-cache-mib=<n>] [--json] [--svg=<file>] [--tmpdir=<dir>] [--keep]
   or: git repack-ts zstd-import [<level options>] [--fsck=<mode> | --no-fsck] [--force] <file>
   or: git repack-ts walk [--read-blobs] [--json] [<pack>...]
   or: git repack-ts maintenance (start | stop) [--scheduler=<scheduler>]

Rewrite the repository's packs with per-type zlib levels, keeping every delta.
See 'git help repack-ts' for the options of each command.
`;

type Runner = (args: string[], ctx: CliContext) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Runner>> = {
  repack: async () => (await import('./repack.js')).runRepack,
  verify: async () => (await import('./verify.js')).runVerify,
  inspect: async () => (await import('./inspect.js')).runInspect,
  'zstd-import': async () => (await import('./zstd-import.js')).runZstdImport,
  walk: async () => (await import('./walk.js')).runWalk,
  'hash-object': async () => (await import('./hash-object.js')).runHashObject,
  bench: async () => (await import('./bench.js')).runBench,
  maintenance: async () => (await import('./maintenance.js')).runMaintenance,
};

/** package.json's version (beside dist/ in the installed package, beside src/ in the clone). */
function version(): string {
  return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
}

/** The man page shipped beside dist/ (docs/git-repack-ts.1). */
const MAN_PAGE = fileURLToPath(new URL('../../docs/git-repack-ts.1', import.meta.url));

function showManPage(io: Io): number {
  // `git repack-ts --help` is turned into `git help repack-ts` by git itself; this covers
  // `git-repack-ts --help` run directly and `git repack-ts <command> --help`: the installed
  // page, else the one in this package, else the usage. `man -w` only looks (its "No manual
  // entry" goes nowhere), so a missing installed page falls back silently, as git's help does.
  const installed = spawnSync('man', ['-w', 'git-repack-ts'], { stdio: 'ignore', env: io.env });
  const args = installed.status === 0 ? ['git-repack-ts'] : ['-l', MAN_PAGE];
  if (installed.error === undefined) {
    const r = spawnSync('man', args, { stdio: 'inherit', env: io.env });
    if (r.status === 0) return 0;
  }
  io.out(MAIN_USAGE);
  return 0;
}

export async function main(args: string[], io: Io): Promise<number> {
  if (io.env.GIT_REPACK_TS_NO_ZSTD === '1') disableZstd('disabled by GIT_REPACK_TS_NO_ZSTD=1');
  else if (io.env.GIT_REPACK_TS_ZSTD !== undefined) onlyZstd(io.env.GIT_REPACK_TS_ZSTD);
  try {
    const lead = await leadingOptions(args, io);
    if (typeof lead === 'number') return lead;
    const rest = args.slice(lead.next);
    let name = 'repack';
    if (rest[0] !== undefined && !rest[0].startsWith('-')) {
      if (!(rest[0] in COMMANDS)) throw new UsageError(`unknown command '${rest[0]}'`, MAIN_USAGE);
      name = rest.shift()!;
    }
    const load = COMMANDS[name];
    if (load === undefined)
      throw new UsageError(`the '${name}' command is not available yet`, MAIN_USAGE);
    const run = await load();
    return await run(rest, { io, cwd: lead.cwd ?? io.cwd, gitDir: lead.gitDir });
  } catch (e) {
    if (e instanceof ManPageRequested) return showManPage(io);
    return reportError(io, e);
  }
}

/**
 * git.c's handle_options for what comes before the subcommand: `-C`, `--git-dir`, `-h`, `--help`,
 * `--version`. The directory stays undefined (the process's) until a `-C` names one, so that a
 * `-C /abs` works where the current directory is gone. A number is an exit status.
 */
async function leadingOptions(
  args: string[],
  io: Io,
): Promise<number | { next: number; cwd: string | undefined; gitDir: string | undefined }> {
  let cwd: string | undefined;
  let gitDir: string | undefined;
  let i = 0;
  const need = (opt: string): string => {
    const v = args[i + 1];
    if (v === undefined) throw new UsageError(`option '${opt}' requires a value`, MAIN_USAGE);
    i += 2;
    return v;
  };
  for (;;) {
    const a = args[i];
    if (a === undefined) break;
    if (a === '-C' || (a.startsWith('-C') && a.length > 2)) {
      const p = a === '-C' ? need('-C') : (i++, a.slice(2));
      if (p !== '') cwd = changeDirectory(cwd, p, io); // git ignores `-C ""`
      continue;
    }
    if (a === '--git-dir' || a.startsWith('--git-dir=')) {
      const p = a === '--git-dir' ? need('--git-dir') : (i++, a.slice('--git-dir='.length));
      gitDir = resolve(cwd ?? io.cwd, p);
      continue;
    }
    if (a === '-h') throw new HelpRequested(await mainHelp());
    if (a === '--help') return showManPage(io);
    if (a === '--version') {
      io.out(`git-repack-ts version ${version()}\n`);
      return 0;
    }
    break;
  }
  return { next: i, cwd, gitDir };
}

/** `-C <p>`: git's chdir(), with its errno in the message (ENOTDIR for a file or a path through one, ENOENT, EACCES…). */
function changeDirectory(from: string | undefined, p: string, io: Io): string {
  const fail = (errno: string): GitError =>
    new GitError('io', `cannot change to '${p}': ${strerror(errno)}`, {
      errno,
      syscall: 'chdir',
      path: p,
    });
  let base = from;
  if (base === undefined && !isAbsolute(p)) {
    try {
      base = io.cwd;
    } catch {
      throw fail('ENOENT'); // chdir() relative to a directory that is gone: nothing is found there
    }
  }
  const next = resolve(base ?? '/', p);
  try {
    if (!statSync(fsPath(next)).isDirectory()) throw fail('ENOTDIR');
    // A name that is not UTF-8: a string that reaches the directory all the same.
    if (hasEscapedBytes(next)) return directoryString(encodeEscaped(next));
  } catch (e) {
    if (e instanceof GitError) throw e;
    throw fail((e as NodeJS.ErrnoException).code ?? 'ENOENT');
  }
  return next;
}

/** `git repack-ts -h`: every form of the command, then the options of the default one (repack). */
async function mainHelp(): Promise<string> {
  const { REPACK_USAGE } = await import('./repack.js');
  const forms = MAIN_USAGE.slice(0, MAIN_USAGE.indexOf('\n\n') + 1);
  return forms + REPACK_USAGE.slice(REPACK_USAGE.indexOf('\n') + 1);
}

/** The bin entry: run, then exit with git's code once output has drained. */
export async function run(): Promise<void> {
  installSignalCleanup();
  const io = processIo();
  const code = await main(rawArguments(), io);
  // A few more turns of the event loop: a signal that arrived during the last synchronous stretch
  // (the install, a scan) is handled, and we die of it as git would, rather than lose it (the
  // first idle turn after a long stretch does not always dispatch it: measured, docs/reliability.md).
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  // What a pipe has not taken yet is still queued in Node (a full pipe: EAGAIN): it is written
  // before we return, as the bin entry ends the process as soon as we do. A reader gone (EPIPE)
  // ends the wait too.
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  await new Promise((r) => setImmediate(r)); // a failed write's 'error' event comes a tick after its callback
  // git.c's run_builtin: a command that succeeded still fails if its output could not be written.
  const lost = code === 0 ? stdoutFailure() : undefined;
  if (lost !== undefined) io.err(`fatal: ${lost.message}\n`);
  process.exitCode = lost !== undefined ? 128 : code;
}

/** Resolves once everything written to `stream` so far has left the process (or cannot). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => stream.write('', () => resolve()));
}
