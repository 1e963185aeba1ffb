import { availableParallelism } from 'node:os';
import { GitError } from '../errors.js';
import {
  DelegatedGitFailed,
  hashObjects,
  type HashObjectOptions,
} from '../commands/hash-object/hash-object.js';
import { HashObjectError } from '../hash/hash-object.js';
import { type Io, UsageError, reportError } from './io.js';
import { WriteFailure } from './output.js';
import type { CliContext } from './main.js';
import { euidOf } from './repo.js';

/**
 * `git repack-ts hash-object`: argv parsed by a port of git's parse-options for this one table
 * (abbreviations, `-stdin` typo checks and git's exact messages, which `git hash-object` users
 * script against; the other subcommands use cli/args.ts), then commands/hash-object.
 */

export const HASH_OBJECT_USAGE = `usage: git repack-ts hash-object [-t <type>] [-w] [--path=<file> | --no-filters]
                                 [--stdin [--literally]] [--] <file>...
   or: git repack-ts hash-object [-t <type>] [-w] --stdin-paths [--no-filters]

    -t <type>             object type
    -w                    write the object into the object database
    --stdin               read the object from stdin
    --stdin-paths         read file names from stdin
    --no-filters          store file as is without filters
    --literally           just hash any random garbage to create corrupt objects for debugging Git
    --path <file>         process file as it were from this path

`;

export interface ParsedHashObjectArgs {
  type: string;
  write: boolean;
  stdin: number;
  stdinPaths: boolean;
  noFilters: boolean;
  literally: boolean;
  path: string | undefined;
  files: string[];
}

/** The outcome of parsing: options, or what git's parse_options would print and exit with. */
export type ParseOutcome =
  | { kind: 'ok'; args: ParsedHashObjectArgs }
  | { kind: 'exit'; code: number; stdout: string; stderr: string };

type Kind = 'string' | 'bit' | 'countup' | 'bool';
interface OptionSpec {
  short?: string;
  long?: string;
  kind: Kind;
  key: 'type' | 'write' | 'stdin' | 'stdinPaths' | 'noFilters' | 'literally' | 'path';
}

/** In git's order (it decides which candidates an ambiguous abbreviation names). */
const OPTIONS: OptionSpec[] = [
  { short: 't', kind: 'string', key: 'type' },
  { short: 'w', kind: 'bit', key: 'write' },
  { long: 'stdin', kind: 'countup', key: 'stdin' },
  { long: 'stdin-paths', kind: 'bool', key: 'stdinPaths' },
  { long: 'no-filters', kind: 'bool', key: 'noFilters' },
  { long: 'literally', kind: 'bool', key: 'literally' },
  { long: 'path', kind: 'string', key: 'path' },
];

const SHORT = 1;
const UNSET = 2;

class ParseExit {
  constructor(
    readonly code: number,
    readonly stdout: string,
    readonly stderr: string,
  ) {}
}

function optname(opt: OptionSpec, flags: number): string {
  if (flags & SHORT) return `switch \`${opt.short}'`;
  if (flags & UNSET) return `option \`no-${opt.long}'`;
  return `option \`${opt.long}'`;
}

/** git's parse-options (parse-options.c in git 2.39), for hash-object's option table. */
class Parser {
  readonly out: ParsedHashObjectArgs = {
    type: 'blob',
    write: false,
    stdin: 0,
    stdinPaths: false,
    noFilters: false,
    literally: false,
    path: undefined,
    files: [],
  };
  /** The argument being parsed. */
  i = 0;
  /** The value glued to the option being parsed (`-tblob`, `--path=x`), git's `p->opt`. */
  glued: string | undefined;

  constructor(
    readonly argv: string[],
    readonly usage: string,
  ) {}

  error(msg: string): ParseExit {
    return new ParseExit(129, '', `error: ${msg}\n`);
  }

  showUsage(): ParseExit {
    return new ParseExit(129, this.usage, '');
  }

  /** get_value: stores one option's value (the next argument when nothing is glued). */
  getValue(opt: OptionSpec, flags: number): void {
    const unset = (flags & UNSET) !== 0;
    if (unset && this.glued !== undefined)
      throw this.error(`${optname(opt, flags)} takes no value`);
    if (!(flags & SHORT) && this.glued !== undefined && opt.kind !== 'string')
      throw this.error(`${optname(opt, flags)} takes no value`);
    const out = this.out;
    if (opt.kind === 'bit' || opt.kind === 'bool') (out[opt.key] as boolean) = !unset;
    else if (opt.kind === 'countup') out.stdin = unset ? 0 : out.stdin + 1;
    else if (unset) {
      if (opt.key === 'path') out.path = undefined;
    } else {
      let v: string;
      if (this.glued !== undefined) {
        v = this.glued;
        this.glued = undefined;
      } else if (this.i + 1 < this.argv.length) {
        v = this.argv[++this.i]!;
      } else {
        throw this.error(`${optname(opt, flags)} requires a value`);
      }
      if (opt.key === 'type') out.type = v;
      else out.path = v;
    }
  }

  /** parse_short_opt: false when the letter is unknown (glued then still points at it). */
  parseShort(): boolean {
    const c = this.glued![0]!;
    const opt = OPTIONS.find((o) => o.short === c);
    if (opt === undefined) return false;
    this.glued = this.glued!.length > 1 ? this.glued!.slice(1) : undefined;
    this.getValue(opt, SHORT);
    return true;
  }

  /** check_typos: `-stdin` was surely meant as `--stdin`. */
  checkTypos(arg: string): void {
    if (arg.length < 3) return;
    if (
      arg.startsWith('no-') ||
      OPTIONS.some((o) => o.long !== undefined && o.long.startsWith(arg))
    ) {
      throw this.error(`did you mean \`--${arg}\` (with two dashes)?`);
    }
  }

  /**
   * One option of parse_long_opt's loop: 'done' when `arg` names it exactly (its value stored),
   * an abbreviation's flags (`arg`'s own, and the option's negation) when `arg` abbreviates it,
   * undefined when it does not match.
   */
  matchLong(
    opt: OptionSpec & { long: string },
    arg: string,
    argEnd: number,
  ): 'done' | { flags: number; optFlags: number } | undefined {
    let longName = opt.long;
    let flags = 0;
    let optFlags = 0;
    for (;;) {
      let rest: string | undefined = arg.startsWith(longName)
        ? arg.slice(longName.length)
        : undefined;
      if (rest === undefined) {
        if (longName.startsWith(arg.slice(0, argEnd))) return { flags, optFlags };
        if ('no-'.startsWith(arg)) return { flags: flags | UNSET, optFlags };
        if (!arg.startsWith('no-')) {
          if (!longName.startsWith('no-')) return undefined;
          longName = longName.slice(3);
          optFlags |= UNSET;
          continue;
        }
        flags |= UNSET;
        rest = arg.slice(3).startsWith(longName) ? arg.slice(3 + longName.length) : undefined;
        if (rest === undefined)
          return longName.startsWith(arg.slice(3)) ? { flags, optFlags } : undefined;
      }
      if (rest.length > 0) {
        if (rest[0] !== '=') return undefined;
        this.glued = rest.slice(1);
      }
      this.getValue(opt, flags ^ optFlags);
      return 'done';
    }
  }

  /** parse_long_opt: exact names, negations and unambiguous abbreviations. */
  parseLong(arg: string): 'done' | 'unknown' {
    const eq = arg.indexOf('=');
    const argEnd = eq < 0 ? arg.length : eq;
    let abbrev: { opt: OptionSpec; flags: number } | undefined;
    let ambiguous: { opt: OptionSpec; flags: number } | undefined;
    for (const opt of OPTIONS) {
      if (opt.long === undefined) continue;
      const m = this.matchLong(opt as OptionSpec & { long: string }, arg, argEnd);
      if (m === 'done') return 'done';
      if (m === undefined) continue;
      if (abbrev !== undefined) ambiguous = abbrev;
      if (!(m.flags & UNSET) && eq >= 0) this.glued = arg.slice(eq + 1);
      abbrev = { opt, flags: m.flags ^ m.optFlags };
    }
    if (ambiguous !== undefined && abbrev !== undefined) {
      const a = `${ambiguous.flags & UNSET ? 'no-' : ''}${ambiguous.opt.long}`;
      const b = `${abbrev.flags & UNSET ? 'no-' : ''}${abbrev.opt.long}`;
      throw new ParseExit(
        129,
        this.usage,
        `error: ambiguous option: ${arg} (could be --${a} or --${b})\n`,
      );
    }
    if (abbrev === undefined) return 'unknown';
    this.getValue(abbrev.opt, abbrev.flags);
    return 'done';
  }

  unknown(shown: string, letter: string | undefined): ParseExit {
    let msg: string;
    if (shown[1] === '-') msg = `unknown option \`${shown.slice(2)}'`;
    else if (letter !== undefined && letter.charCodeAt(0) < 128)
      msg = `unknown switch \`${letter}'`;
    else msg = `unknown non-ascii option in string: \`${shown}'`;
    return new ParseExit(129, '', `error: ${msg}\n${this.usage}`);
  }

  /** A cluster of short options (`-wt blob`, `-tblob`). */
  parseShortCluster(arg: string): void {
    this.glued = arg.slice(1);
    if (!this.parseShort()) {
      this.checkTypos(arg.slice(1));
      if (this.glued![0] === 'h') throw this.showUsage();
      throw this.unknown(arg, this.glued![0]);
    }
    if (this.glued !== undefined) this.checkTypos(arg.slice(1));
    while (this.glued !== undefined) {
      if (!this.parseShort()) {
        if (this.glued[0] === 'h') throw this.showUsage();
        throw this.unknown('-' + this.glued, this.glued[0]);
      }
    }
  }

  /** parse_options_step over the whole argv; throws ParseExit. */
  parse(): ParsedHashObjectArgs {
    const argv = this.argv;
    for (; this.i < argv.length; this.i++) {
      const arg = argv[this.i]!;
      this.glued = undefined;
      if (arg[0] !== '-' || arg.length === 1) {
        this.out.files.push(arg);
        continue;
      }
      if (argv.length === 1 && arg === '-h') throw this.showUsage();
      if (arg[1] !== '-') {
        this.parseShortCluster(arg);
        continue;
      }
      if (arg === '--' || arg === '--end-of-options') {
        this.out.files.push(...argv.slice(this.i + 1));
        break;
      }
      if (arg === '--help-all' || arg === '--help') throw this.showUsage();
      if (this.parseLong(arg.slice(2)) === 'unknown') throw this.unknown(arg, undefined);
    }
    return this.out;
  }
}

/** git's parse-options, for hash-object's option table (parse-options.c in git 2.39). */
export function parseHashObjectArgs(argv: string[], usage = HASH_OBJECT_USAGE): ParseOutcome {
  try {
    return { kind: 'ok', args: new Parser(argv, usage).parse() };
  } catch (e) {
    if (e instanceof ParseExit)
      return { kind: 'exit', code: e.code, stdout: e.stdout, stderr: e.stderr };
    throw e;
  }
}

function printFailure(io: Io, e: unknown): number {
  if (e instanceof DelegatedGitFailed) {
    io.err(e.stderr);
    return e.status;
  }
  if (e instanceof GitError && e.code === 'usage')
    return reportError(io, new UsageError(e.message, HASH_OBJECT_USAGE));
  if (e instanceof HashObjectError) for (const d of e.details) io.err(`error: ${d}\n`);
  if (e instanceof WriteFailure) {
    io.err(`fatal: ${e.named('hash to stdout')}\n`);
    return 128;
  }
  return reportError(io, e);
}

export async function runHashObject(argv: string[], ctx: CliContext): Promise<number> {
  const { io } = ctx;
  const parsed = parseHashObjectArgs(argv);
  if (parsed.kind === 'exit') {
    if (parsed.stderr) io.err(parsed.stderr);
    try {
      if (parsed.stdout) io.out(parsed.stdout);
    } catch (e) {
      // parse-options exits 129 at once: git never checks its stdout then.
      if (!(e instanceof WriteFailure)) throw e;
    }
    return parsed.code;
  }
  const a = parsed.args;
  if (a.write && io.env === process.env && process.env.UV_THREADPOOL_SIZE === undefined) {
    // -w deflates on the libuv pool, 4 threads unless told otherwise: one per core, read when the
    // pool starts (nothing has used it yet).
    process.env.UV_THREADPOOL_SIZE = String(Math.min(128, Math.max(4, availableParallelism())));
  }
  const opts: HashObjectOptions = {
    ...a,
    cwd: ctx.cwd,
    gitDir: ctx.gitDir,
    env: io.env,
    euid: euidOf(ctx),
    stdinFd: 0,
  };
  try {
    await hashObjects(opts, {
      onIds: (lines) => io.out(lines),
      onStderr: (t) => io.err(t),
    });
    return 0;
  } catch (e) {
    return printFailure(io, e);
  }
}
