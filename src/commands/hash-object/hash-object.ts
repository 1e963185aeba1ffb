import { GitError } from '../../errors.js';
import { HashObjectError } from '../../hash/hash-object.js';
import { discoverRepository, type Repository } from '../../store/repo.js';
import type { Decision } from './convert.js';
import type { PreHashed } from './pre-hash.js';
import { Session } from './session.js';
import { stdinPathOfLine } from './c-quote.js';
import { encodeEscaped, fsPath } from '../arg-bytes.js';
import type { PreHashPool } from './pre-hash-pool.js';
import { LineReader, regularFileSize } from './read-loop.js';

export { attrsAreIdentity, decisionFor } from './convert.js';
export { DelegatedGitFailed } from './delegate.js';
export { unquoteCStyle } from './c-quote.js';
export { strerror } from '../strerror.js';

/**
 * `git hash-object`, compatible in interface, output and exit codes (builtin/hash-object.c of git
 * 2.39), but without `index_stream`'s deflate when nothing is written: content is streamed once
 * through the hash. Content conversion is imitated only where it cannot change anything (no
 * attributes that apply, or at most CRLF → LF on content without a CR); otherwise `git
 * hash-object` itself is run for the path.
 */

export interface HashObjectOptions {
  /** `-t`; git's default is blob. */
  type: string;
  /** `-w` */
  write: boolean;
  /** `--literally`: any type, no format check, no conversion, always a loose object. */
  literally: boolean;
  /** `--no-filters` */
  noFilters: boolean;
  /** `--path` as given. */
  path: string | undefined;
  /** `--stdin`, counted as git does (more than one is an error). */
  stdin: number;
  /** `--stdin-paths` */
  stdinPaths: boolean;
  files: string[];
  cwd: string;
  /** `--git-dir` of the top-level command. */
  gitDir: string | undefined;
  env: NodeJS.ProcessEnv;
  /** geteuid(), for discovery's ownership check (required: every entry point makes it). */
  euid: number;
  /** Where `--stdin` and `--stdin-paths` read (default 0). */
  stdinFd?: number;
  /** Deflate threads with `-w` (default: available cores). */
  concurrency?: number;
}

export interface HashObjectHooks {
  /**
   * Ids, in order, one per line: each batch as soon as it is known (git flushes each line; we
   * flush after each read of `--stdin-paths`, before each delegated git, and at the end).
   */
  onIds(lines: string): void;
  /** Warnings printed by a delegated `git hash-object`. */
  onStderr?(text: string): void;
  signal?: AbortSignal;
}

export interface HashObjectResult {
  objects: number;
  /** Loose objects written. */
  loose: number;
  /** Packs written for blobs above `core.bigFileThreshold`. */
  packs: string[];
  /** Ids computed by `git hash-object` because git would convert the content. */
  delegated: number;
}

/** git's usage errors of hash-object (checked after the repository setup, as git does). */
export function usageProblem(
  o: Pick<HashObjectOptions, 'stdin' | 'stdinPaths' | 'files' | 'path' | 'noFilters'>,
): string | undefined {
  let err: string | undefined;
  if (o.stdinPaths) {
    if (o.stdin) err = "Can't use --stdin-paths with --stdin";
    else if (o.files.length > 0) err = "Can't specify files with --stdin-paths";
    else if (o.path !== undefined) err = "Can't use --stdin-paths with --path";
  } else {
    if (o.stdin > 1) err = 'Multiple --stdin arguments are not supported';
    if (o.path !== undefined && o.noFilters) err = "Can't use --path with --no-filters";
  }
  return err;
}

/** Opens the repository as hash-object does: required with -w, optional without. */
export function openHashObjectRepository(
  o: Pick<HashObjectOptions, 'write' | 'cwd' | 'gitDir' | 'env' | 'euid'>,
): Repository | undefined {
  try {
    return discoverRepository({ cwd: o.cwd, gitDir: o.gitDir, env: o.env, euid: o.euid });
  } catch (e) {
    // setup_git_directory_gently: outside a repository, or in another user's, is "no repository".
    if (
      !o.write &&
      e instanceof GitError &&
      (e.code === 'not-a-repository' || e.code === 'dubious-ownership')
    )
      return undefined;
    throw e;
  }
}

/**
 * Runs hash-object: `--stdin` first, then the files, then `--stdin-paths`, handing ids to
 * `hooks.onIds` as they are computed. Usage problems throw GitError('usage') after the repository
 * setup, like git.
 */
export async function hashObjects(
  o: HashObjectOptions,
  hooks: HashObjectHooks,
): Promise<HashObjectResult> {
  const pool = await preHashPool(o);
  let s: Session;
  try {
    s = new Session(o, hooks, openHashObjectRepository(o), pool);
  } catch (e) {
    pool?.close();
    throw e;
  }
  try {
    await s.prepareWrite();
    const problem = usageProblem(o);
    if (problem !== undefined) throw new GitError('usage', problem);
    if (o.stdin) await hashStdin(s);
    if (o.files.length > 0) await hashFiles(s);
    if (o.stdinPaths) await hashStdinPaths(s);
  } finally {
    try {
      s.flush();
    } finally {
      s.close();
    }
  }
  return s.result;
}

/**
 * `--stdin-paths` without -w hashes blobs ahead of their turn (pre-hash.ts), on two threads for
 * long lists. A list in a file of more than WORKER_MIN_PATHS short names starts the second thread
 * now: it starts while this one finds the repository and reads the configuration.
 */
async function preHashPool(o: HashObjectOptions): Promise<PreHashPool | undefined> {
  if (!o.stdinPaths || o.write || o.type !== 'blob' || usageProblem(o) !== undefined)
    return undefined;
  const { PreHashPool, WORKER_MIN_PATHS } = await import('./pre-hash-pool.js');
  const pool = new PreHashPool();
  if ((regularFileSize(o.stdinFd ?? 0) ?? 0) >= WORKER_MIN_PATHS * 8) pool.startWorker();
  return pool;
}

/** `--stdin [--path=p]`: read once, so any conversion that may apply is git's to do. */
async function hashStdin(s: Session): Promise<void> {
  const o = s.o;
  const vpath = o.path !== undefined ? s.prefixed(o.path) : undefined;
  const d = s.mayConvert && vpath !== undefined ? s.decide([o.path!], o.cwd)[0]! : 'identity';
  const decision: Decision = d === 'crlf' || d === 'crlf-text' ? 'delegate' : d;
  await s.hashItem({ open: undefined, vpath, shown: '' }, decision, () => ({
    args: ['--stdin', `--path=${o.path}`],
    input: 'stdin',
  }));
}

/** The files on the command line, in order (`--path` names the attributes of all of them). */
async function hashFiles(s: Session): Promise<void> {
  const o = s.o;
  const vpath = o.path !== undefined ? s.prefixed(o.path) : undefined;
  const hashOne = (i: number, decision: Decision): Promise<void> => {
    const arg = o.files[i]!;
    const shown = s.prefixed(arg);
    const label = o.noFilters ? undefined : (vpath ?? shown);
    return s.hashItem({ open: fsPath(shown), vpath: label, shown }, decision, () => ({
      args: [
        ...(o.type !== 'blob' ? ['-t', o.type] : []),
        ...(o.path !== undefined ? [`--path=${o.path}`] : []),
        '--',
        arg,
      ],
      input: Buffer.alloc(0),
    }));
  };
  if (!o.write && o.type === 'blob' && o.path === undefined) {
    // Each file's own path names its attributes: a batch, as for --stdin-paths.
    await hashBatch(
      s,
      o.files.map((f) => encodeEscaped(s.prefixed(f))),
      hashOne,
    );
    return;
  }
  let decisions: Decision[];
  if (o.path !== undefined && s.mayConvert) {
    const d = s.decide([o.path], o.cwd)[0]!;
    decisions = o.files.map(() => d);
  } else decisions = s.decide(o.files, o.cwd);
  for (let i = 0; i < o.files.length; i++) await hashOne(i, decisions[i]!);
}

/**
 * hash_stdin_paths: one path per line (C-quoted if it starts with `"`), relative to the top, in
 * batches of what one read of the input returned. For each batch `git check-attr` runs as a
 * process of its own while this thread hashes the batch's files (both cores busy); then the ids
 * go out in order, delegated paths and files with a CR where git would convert them included.
 */
async function hashStdinPaths(s: Session): Promise<void> {
  const reader = new LineReader(s.o.stdinFd ?? 0);
  for (let lines = await reader.next(); lines !== undefined; lines = await reader.next()) {
    s.hooks.signal?.throwIfAborted();
    const paths: Buffer[] = [];
    for (const raw of lines) {
      const p = stdinPathOfLine(raw);
      if (p === undefined) break;
      paths.push(p);
    }
    await hashPathBatch(s, lines, paths);
    s.flush();
    if (paths.length < lines.length) throw new HashObjectError('io', 'line is badly quoted');
  }
}

async function hashPathBatch(s: Session, lines: Buffer[], paths: Buffer[]): Promise<void> {
  const o = s.o;
  if (o.write || o.type !== 'blob') {
    const decisions = await s.decideAsync(paths, s.base);
    for (let i = 0; i < paths.length; i++)
      await hashPathInOrder(s, lines[i]!, paths[i]!, decisions[i]!);
    return;
  }
  await hashBatch(s, paths, (i, d) => hashPathInOrder(s, lines[i]!, paths[i]!, d));
}

function hashPathInOrder(s: Session, line: Buffer, p: Buffer, d: Decision): Promise<void> {
  const o = s.o;
  const text = p.toString('utf8');
  return s.hashItem({ open: p, vpath: o.noFilters ? undefined : text, shown: text }, d, () => ({
    args: [...(o.type !== 'blob' ? ['-t', o.type] : []), '--stdin-paths'],
    input: Buffer.concat([line, Buffer.from('\n')]),
  }));
}

/**
 * Blobs without -w, named by paths relative to the top of the work tree that are also their
 * attribute paths: ids are computed ahead of their turn (pre-hash.ts; without -w a blob's id
 * does not depend on what git decides about conversion unless the content has a CR), and only
 * what may convert is decided; `inOrder` hashes the rest as git would, in order.
 */
async function hashBatch(
  s: Session,
  paths: Buffer[],
  inOrder: (i: number, d: Decision) => Promise<void>,
): Promise<void> {
  let early: (PreHashed | undefined)[];
  let decisions: Decision[];
  if (s.mayConvertWithoutCr(paths)) {
    // Hash while git answers.
    const decided = s.decideAsync(paths, s.base);
    early = s.preHash(paths);
    decisions = await decided;
  } else {
    // Only content with a CR can change: git is asked about those paths alone, once they are known.
    early = s.preHash(paths);
    const ask: number[] = [];
    for (let i = 0; i < paths.length; i++) if (early[i]?.cr !== false) ask.push(i);
    const answers = s.decide(
      ask.map((i) => paths[i]!),
      s.base,
    );
    decisions = paths.map(() => 'identity');
    for (let k = 0; k < ask.length; k++) decisions[ask[k]!] = answers[k]!;
  }
  for (let i = 0; i < paths.length; i++) {
    const d = decisions[i]!;
    const known = early[i];
    if (known !== undefined && (d === 'identity' || (d !== 'delegate' && !known.cr))) {
      s.hooks.signal?.throwIfAborted();
      s.emit(known.hex);
      continue;
    }
    await inOrder(i, d);
  }
}
