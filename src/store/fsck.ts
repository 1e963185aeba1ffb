import { killOnSignal, pipeToChild } from '../cleanup.js';
import { spawn, spawnSync } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import type { Writable } from 'node:stream';
import { KilledBySignal } from '../cleanup.js';
import { errnoText } from '../errors.js';

/**
 * What git checks after the rewrite: `changed` (the default) reads back every entry whose bytes
 * were written anew (`indexPackStream`, while they are written); `full` and `connectivity` run `git fsck` on the
 * repository as it will be.
 */
export type FsckMode = 'changed' | 'full' | 'connectivity' | 'none';

/**
 * Runs `git fsck` on the repository as seen through `objectsDir` (our view of the state after the
 * rewrite). Returns git's output when it finds a problem.
 */
export async function runGitFsck(
  gitDir: string,
  objectsDir: string,
  mode: FsckMode,
  env: NodeJS.ProcessEnv,
  opts: { assumePromisor?: boolean; onProgress?: GitProgress | undefined } = {},
): Promise<{ ok: boolean; output: string }> {
  if (mode === 'none') return { ok: true, output: '' };
  // `changed` here is a pack whose every entry was written anew (a zstd import): all of it.
  const connectivityOnly = mode === 'connectivity';
  const run = (promisor: boolean): Promise<{ ok: boolean; output: string }> => {
    const args = promisor ? ['-c', 'remote.repack-ts-promisor.promisor=true', 'fsck'] : ['fsck'];
    args.push('--no-dangling', opts.onProgress ? '--progress' : '--no-progress');
    if (connectivityOnly) args.push('--connectivity-only');
    const o = { env: viewEnv(gitDir, objectsDir, env), cwd: gitDir };
    return runChild('git fsck', args, o, opts.onProgress);
  };
  // A partial clone copied without its config (as public snapshots are) has promisor packs but no
  // promisor remote; git would call every promised object missing. A promisor remote for fsck,
  // only once an object is missing: with one, git parses every object of every promisor pack to
  // list what they promise (jq: 3.6 s against 0.23 s for --connectivity-only).
  const first = await run(false);
  if (
    first.ok ||
    opts.assumePromisor !== true ||
    !onlyMissingObjects(first.output, hexLenOf(first.output))
  )
    return first;
  return run(true);
}

/** git's own progress, as (phase, done, total): `total` 0 while git counts without one. */
export type GitProgress = (phase: string, done: number, total: number) => void;

/**
 * git's progress lines (progress.c's `display`: `Title:  42% (420/1000)` or `Title: 420`, each
 * ended by `\r`, the last by `, done.\n`) turned into calls of `onProgress`, the phase being
 * git's title with a lower-case initial (as ours are); anything else goes to `rest` as it came.
 */
function progressParser(
  onProgress: GitProgress,
  rest: (b: Buffer) => void,
): { write: (b: Buffer) => void; flush: () => void } {
  const text = new StringDecoder('utf8'); // a character may span two reads
  let pending = '';
  let counting: string | undefined; // the phase of the last count without a total
  const record = (r: string): void => {
    const m =
      /^([A-Z][^:\n]*): +(\d+)% \((\d+)\/(\d+)\)(, done\.)?\s*$/.exec(r) ??
      /^([A-Z][^:\n]*): (\d+)()()(, done\.)?\s*$/.exec(r);
    if (m === null) return rest(Buffer.from(r));
    const phase = m[1]![0]!.toLowerCase() + m[1]!.slice(1);
    if (m[4] !== '') return onProgress(phase, Number(m[3]), Number(m[4]));
    // A count without a total: total 0 while it runs, its last value once done (as git's
    // `Checking connectivity: 9, done.`, shown by the caller without a percentage).
    const done = Number(m[2]);
    const finished = m[5] !== undefined;
    if (counting !== phase || !finished) onProgress(phase, done, 0);
    counting = finished ? undefined : phase;
    if (finished) onProgress(phase, done, done);
  };
  const write = (b: Buffer): void => {
    const records = (pending + text.write(b)).split(/(?<=[\r\n])/);
    pending = /[\r\n]$/.test(records[records.length - 1]!) ? '' : records.pop()!;
    for (const r of records) record(r);
  };
  const flush = (): void => {
    pending += text.end();
    if (pending !== '') rest(Buffer.from(pending));
  };
  return { write, flush };
}

/** What is kept of a child's output (its stdout, then its stderr), as spawnSync's maxBuffer bounded it. */
const OUTPUT_LIMIT = 1 << 28;

/**
 * Runs git without holding the event loop (a SIGTERM to us meanwhile is passed on to it, as git's
 * run-command does, `killOnSignal`): ok on exit 0, and its stdout then stderr, trimmed.
 */
function runChild(
  what: string,
  args: string[],
  o: { env: NodeJS.ProcessEnv; cwd: string },
  onProgress?: GitProgress,
): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve, reject) => {
    const child = killOnSignal(spawn('git', args, { ...o, stdio: ['ignore', 'pipe', 'pipe'] }));
    const kept = { out: [] as Buffer[], err: [] as Buffer[], bytes: 0 };
    const keep =
      (into: Buffer[]) =>
      (b: Buffer): void => {
        if (kept.bytes < OUTPUT_LIMIT) into.push(b);
        kept.bytes += b.length;
      };
    child.stdout.on('data', keep(kept.out));
    const errs = keep(kept.err);
    const parser = onProgress ? progressParser(onProgress, errs) : undefined;
    child.stderr.on('data', parser?.write ?? errs);
    child.on('error', (e) => resolve({ ok: false, output: `cannot run ${what}: ${errnoText(e)}` }));
    child.on('close', (code, signal) => {
      parser?.flush();
      if (signal !== null) reject(new KilledBySignal(what, signal));
      else
        resolve({
          ok: code === 0,
          output: Buffer.concat([...kept.out, ...kept.err])
            .toString('utf8')
            .trim(),
        });
    });
  });
}

/** git run on the repository as seen through `objectsDir`. */
function viewEnv(gitDir: string, objectsDir: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const childEnv: NodeJS.ProcessEnv = {
    ...env,
    GIT_DIR: gitDir,
    GIT_OBJECT_DIRECTORY: objectsDir,
    GIT_NO_LAZY_FETCH: '1',
  };
  delete childEnv.GIT_WORK_TREE;
  delete childEnv.GIT_ALTERNATE_OBJECT_DIRECTORIES;
  return childEnv;
}

/** The id length (hex) of the ids in git's output: 64 when it names a SHA-256 id. */
function hexLenOf(output: string): number {
  return /\b[0-9a-f]{64}\b/.test(output) ? 64 : 40;
}

/** Is every line of git fsck's output a complaint about a missing object? */
function onlyMissingObjects(output: string, hexLen: number): boolean {
  const patterns = missingObjectPatterns(hexLen);
  const lines = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.length > 0 && lines.every((l) => patterns.some((p) => p.test(l)));
}

/** What git index-pack --stdin holds of ours, at most, before we wait for it to read. */
const UNREAD_LIMIT = 4 << 20;

/** A `git index-pack --stdin` that reads a pack as we write it (`indexPackStream`). */
export interface IndexPackStream {
  /**
   * Sends `chunk`, which is git's until `taken` is called (once it is in the pipe, or will never
   * be); once git has stopped reading, nothing more is sent.
   */
  write(chunk: Buffer, taken?: () => void): void;
  /**
   * Undefined when git has everything sent; else a promise to wait for before sending more: one
   * turn of the event loop while git holds less than a few MiB unread, else until half of it is read.
   */
  ready(): Promise<void> | undefined;
  /**
   * Resolves once everything sent is in the pipe (or git stopped reading): what git has not read
   * then waits in the pipe, not in our memory, and no longer on our event loop.
   */
  drained(): Promise<void>;
  /** Everything is sent. */
  end(): void;
  /** The writing failed: git is stopped. */
  kill(): void;
  /** git's exit: ok, or what it said (the pipe no longer counts as open from then on, `pipeToChild`). */
  result: Promise<{ ok: boolean; output: string }>;
}

/**
 * `git index-pack --stdin` on the pack of changed entries, sent while the rewrite writes them
 * (`ChangedTee`): git copies it to `packOut` and writes its index to `idxOut`. Objects are looked
 * up in `emptyObjectsDir` only (nothing there: git does not compare each object with the copy it
 * already has, and a partial clone fetches nothing). Not `--fsck-objects`: git 2.39 then requires
 * every `.gitattributes` and `.gitmodules` blob a tree names, which that pack does not hold (and a
 * partial clone may not). Nothing of it is kept, so git need not fsync it (`core.fsync=none`).
 */
export function indexPackStream(
  gitDir: string,
  packOut: string,
  idxOut: string,
  emptyObjectsDir: string,
  env: NodeJS.ProcessEnv,
): IndexPackStream {
  // Version 2 whatever pack.indexVersion says: `wholeNotIndexed` reads it.
  const args = [
    '-c',
    'core.fsync=none',
    '-c',
    'core.fsyncObjectFiles=false',
    'index-pack',
    '--stdin',
    '--index-version=2',
    '--no-rev-index',
    '-o',
    idxOut,
    packOut,
  ];
  const child = killOnSignal(
    spawn('git', args, {
      env: viewEnv(gitDir, emptyObjectsDir, env),
      cwd: gitDir,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const out: Buffer[] = [];
  let bytes = 0;
  const keep = (b: Buffer): void => {
    if (bytes < 1 << 20) out.push(b);
    bytes += b.length;
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // git stopped reading (it found a problem, or could not start): its exit says why.
  let closed = false;
  const pipeClosed = pipeToChild();
  child.stdin.on('error', () => (closed = true));
  const stdinClosed = new Promise<void>((res) =>
    child.stdin.on('close', () => res(void (closed = true))),
  );
  const result = new Promise<{ ok: boolean; output: string }>((resolve, reject) => {
    child.on('error', (e) =>
      resolve({ ok: false, output: `cannot run git index-pack: ${errnoText(e)}` }),
    );
    child.on('close', (code, signal) => {
      if (signal !== null && !stopped) reject(new KilledBySignal('git index-pack', signal));
      else
        resolve({
          ok: code === 0,
          output: stopped ? 'stopped' : Buffer.concat(out).toString('utf8').trim(),
        });
    });
  });
  let stopped = false;
  // A SIGPIPE from a write into the pipe is raised during the write and handled at a later turn
  // of the event loop: the pipe counts as open until git's exit and the pipe's end have been seen
  // (no write after that) and a turn has passed. A run that stops git (kill) leaves it open: it
  // is ending anyway.
  const afterwards = <T>(then: () => T): Promise<T> =>
    stdinClosed.then(() => new Promise<T>((res) => setImmediate(() => res(then()))));
  const settled: Promise<{ ok: boolean; output: string }> = result.then(
    (r) => afterwards(() => (stopped || pipeClosed(), r)),
    (e: unknown) =>
      afterwards(() => {
        pipeClosed();
        throw e;
      }),
  );
  settled.catch(() => undefined);
  const feed = stdinFeed(child.stdin, () => closed);
  return {
    ...feed,
    end: () => {
      if (!closed) child.stdin.end();
    },
    kill: () => {
      closed = true;
      stopped = true;
      child.kill('SIGKILL');
    },
    result: settled,
  };
}

/**
 * The sending side of `indexPackStream` on git's stdin: `write`, `ready` and `drained` as the
 * interface describes them; `closed` says git stopped reading.
 */
function stdinFeed(
  stdin: Writable,
  closed: () => boolean,
): Pick<IndexPackStream, 'write' | 'ready' | 'drained'> {
  let resume: (() => void) | undefined;
  /** Resolves when `stdin` is empty (`drain`), or else down to `UNREAD_LIMIT / 2`, or closed. */
  const until = (event: 'drain' | undefined): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        if (event !== undefined) stdin.off(event, done);
        stdin.off('close', done);
        resume = undefined;
        resolve();
      };
      if (event !== undefined) stdin.on(event, done);
      else resume = done;
      stdin.on('close', done);
    });
  return {
    write: (chunk, taken) => {
      if (closed()) return taken?.();
      stdin.write(chunk, () => {
        taken?.();
        // Over the limit, the rewrite resumes once git is down to half of it: git still has
        // that much to read while the next entries are made.
        if (resume !== undefined && stdin.writableLength <= UNREAD_LIMIT / 2) resume();
      });
    },
    ready: () => {
      const unread = closed() ? 0 : stdin.writableLength;
      if (unread === 0) return undefined;
      // One turn of the event loop: libuv hands git what its socket takes (the rewrite's own
      // turns are microtasks, which never let it write), so that git is not left idle while
      // this thread works. Over the limit, we wait until git is down to half of it.
      return unread <= UNREAD_LIMIT ? new Promise((res) => setImmediate(res)) : until(undefined);
    },
    drained: () => (closed() || stdin.writableLength === 0 ? Promise.resolve() : until('drain')),
  };
}

/** The complaints of git fsck that name a missing object, and where the id is in each. */
function missingObjectPatterns(hexLen: number): RegExp[] {
  const id = `([0-9a-f]{${hexLen}})`;
  const type = '(?:commit|tree|blob|tag)';
  return [
    new RegExp(`^missing ${type} ${id}$`),
    new RegExp(`^broken link from\\s+${type} ${id}$`),
    new RegExp(`^to\\s+${type} ${id}$`),
    new RegExp(`^error: \\S+: invalid sha1 pointer ${id}$`),
    new RegExp(`^error: \\S+: invalid reflog entry ${id}$`),
    new RegExp(`^error: ${id}: invalid sha1 pointer in cache-tree$`),
  ];
}

/**
 * Is everything git fsck complained about an object written after we listed the repository (a
 * commit made while fsck ran: fsck enumerates objects, then reads refs that name newer ones)? Only
 * when every line is a missing-object complaint, no id is one we listed (`listed`), and every id
 * exists in the repository now. Such complaints are not a consequence of the rewrite, which
 * removes nothing it did not list. Anything else, or any doubt, is a real problem.
 */
export function onlyObjectsWrittenMeanwhile(
  output: string,
  hexLen: number,
  listed: (hex: string) => boolean,
  gitDir: string,
  env: NodeJS.ProcessEnv,
): boolean {
  const patterns = missingObjectPatterns(hexLen);
  const ids = new Set<string>();
  for (const raw of output.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const m = patterns.map((p) => p.exec(line)).find((x) => x !== null);
    if (!m) return false;
    ids.add(m[1]!);
  }
  if (ids.size === 0) return false;
  for (const id of ids) if (listed(id)) return false;
  const childEnv: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir };
  delete childEnv.GIT_OBJECT_DIRECTORY;
  const r = spawnSync('git', ['cat-file', '--batch-check=%(objectname)'], {
    env: childEnv,
    cwd: gitDir,
    input: [...ids].join('\n') + '\n',
    encoding: 'utf8',
  });
  if (r.status !== 0) return false;
  const present = new Set(r.stdout.split('\n').filter((l) => /^[0-9a-f]+$/.test(l)));
  return [...ids].every((id) => present.has(id));
}
