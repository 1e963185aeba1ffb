import { closeSync, fstatSync, open, openSync, statSync, type Stats } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { SHA1, toHex, type HashAlgo } from '../../hash/algo.js';
import {
  ContentSizeError,
  HASH_CHUNK,
  HashObjectError,
  UnableToWriteObject,
  ObjectHasher,
  ObjectTypeTable,
  checkObjectFormat,
  hashFdSync,
  readFdExact,
} from '../../hash/hash-object.js';
import type { GitConfig } from '../../store/config.js';
import type { Repository } from '../../store/repo.js';
import type { ContentSource, ObjectWriteTarget } from '../../store/write-object.js';
import type { HashObjectHooks, HashObjectOptions, HashObjectResult } from './hash-object.js';
import { AttributeOracle, isInside } from './attrs.js';
import type { Decision } from './convert.js';
import { writeSettings, type WriteSettings } from './config.js';
import { loadConfig } from '../../store/config-files.js';
import { realPath } from '../../store/setup-paths.js';
import type { PreHashPool } from './pre-hash-pool.js';
import { BlobPreHasher, joinTargets, splitPaths, type PreHashed } from './pre-hash.js';
import { OutOfMemory, readToEnd } from './read-loop.js';
import { strerror } from '../strerror.js';
import { runHashObject, type Delegation } from './delegate.js';

/**
 * One hash-object run: the repository, its settings, the attribute oracle, and what each item
 * becomes (builtin/hash-object.c's `hash_fd`, object-file.c's `index_fd`).
 */

/** One thing to hash: a path (as a string or raw bytes from --stdin-paths) or the standard input. */
export interface Item {
  /** Opened relative to `base` unless absolute; undefined for --stdin. */
  open: string | Buffer | undefined;
  /** git's `path` for conversion and messages (`vpath`), or undefined (shown as "(null)"). */
  vpath: string | undefined;
  /** How git names the file it could not open (the prefixed argument). */
  shown: string;
}

/** Files below this are read with one buffer of this size. */
const SMALL_READ = 64 * 1024;

/** The type names hash-object accepts without --literally. */
function validType(type: string): boolean {
  return type === 'commit' || type === 'tree' || type === 'blob' || type === 'tag';
}

/** A file name from `from` on that names an entry of its directory (not `.`, `..` or nothing). */
function plainName(p: Buffer, from: number): boolean {
  const n = p.length - from;
  if (n === 0 || (p[from] === 0x2e && (n === 1 || (n === 2 && p[from + 1] === 0x2e)))) return false;
  return true;
}

/** Any CR in the content (what `crlf_to_git` could convert)? */
function crScanner(): { seen: boolean; inspect: (chunk: Buffer) => void } {
  const s = {
    seen: false,
    inspect: (chunk: Buffer): void => void (s.seen ||= chunk.includes(0x0d)),
  };
  return s;
}

/** Where `open(p)` goes once git has changed to `base` (`baseSlash`: its bytes with a trailing slash). */
/** crlf_to_git for text (not auto): every CR followed by LF is dropped. */
export function crlfToLf(src: Buffer): Buffer {
  let at = src.indexOf('\r\n');
  if (at < 0) return src;
  const out = Buffer.allocUnsafe(src.length);
  let len = 0;
  let from = 0;
  while (at >= 0) {
    len += src.copy(out, len, from, at);
    from = at + 1; // the LF is copied with the next run
    at = src.indexOf('\r\n', from);
  }
  len += src.copy(out, len, from);
  return out.subarray(0, len);
}

export function openTarget(p: string | Buffer, base: string, baseSlash: Buffer): string | Buffer {
  if (p.length === 0) {
    // open("") is ENOENT; resolving it against the base would open the directory instead.
    throw Object.assign(new Error("ENOENT: no such file or directory, open ''"), {
      code: 'ENOENT',
    });
  }
  if (typeof p === 'string') return resolve(base, p);
  if (p[0] === 0x2f) return p;
  return Buffer.concat([baseSlash, p], baseSlash.length + p.length);
}

/**
 * xopen(path, O_RDONLY): a FIFO's open waits for a writer, so it is opened on libuv's threadpool,
 * where the wait holds no signal back; anything else at once.
 */
async function openForReading(target: string | Buffer): Promise<number> {
  let fifo = false;
  try {
    fifo = statSync(target, { throwIfNoEntry: false })?.isFIFO() === true;
  } catch {
    // the open below says why, in git's words
  }
  if (!fifo) return openSync(target, 'r');
  return new Promise((resolve, reject) =>
    open(target, 'r', (e, fd) => (e ? reject(e) : resolve(fd))),
  );
}

export class Session {
  readonly algo: HashAlgo;
  /** The directory git works from after setup: the top of the work tree when inside it. */
  readonly base: string;
  private readonly baseSlash: Buffer;
  /** git's `prefix`: the cwd below the top of the work tree, with a trailing slash, or ''. */
  readonly prefix: string;
  readonly table = new ObjectTypeTable();
  private configCache: GitConfig | undefined;
  private oracleCache: AttributeOracle | undefined;
  private target: ObjectWriteTarget | undefined;
  private settings: WriteSettings | undefined;
  private writer: typeof import('../../store/write-object.js') | undefined;
  /** Read buffers, made on first use: a 1 MiB one costs a small run a garbage collection. */
  private smallBuf: Buffer | undefined;
  private largeBuf: Buffer | undefined;
  private hasher: BlobPreHasher | undefined;
  /** Ids not yet handed to `hooks.onIds`. */
  private out = '';
  readonly result: HashObjectResult = { objects: 0, loose: 0, packs: [], delegated: 0 };

  constructor(
    readonly o: HashObjectOptions,
    readonly hooks: HashObjectHooks,
    readonly repo: Repository | undefined,
    /** For `--stdin-paths` without -w (hashObjects made it before the repository was found). */
    private readonly pool?: PreHashPool,
  ) {
    this.algo = repo?.algo ?? SHA1;
    let base = o.cwd;
    let prefix = '';
    if (repo?.workTree !== undefined && isInside(repo.workTree, o.cwd)) {
      const rel = relative(repo.workTree, o.cwd);
      base = repo.workTree;
      prefix = rel === '' ? '' : rel.split(sep).join('/') + '/';
    }
    this.base = base;
    this.baseSlash = Buffer.from(base.endsWith('/') ? base : base + '/');
    this.prefix = prefix;
  }

  get config(): GitConfig {
    // Outside a repository git reads the system, global and command-line scopes from its cwd.
    this.configCache ??=
      this.repo?.config ?? loadConfig({ cwd: realPath(this.o.cwd) ?? this.o.cwd, env: this.o.env });
    return this.configCache;
  }

  private get oracle(): AttributeOracle {
    const o = this.o;
    this.oracleCache ??= new AttributeOracle({
      config: this.config,
      repo: this.repo,
      env: o.env,
      gitDir: o.gitDir,
      write: o.write,
    });
    return this.oracleCache;
  }

  /** git_default_config runs before anything is hashed: bad compression levels die early. */
  async prepareWrite(): Promise<void> {
    if (this.repo === undefined || !this.o.write) {
      // Still parsed (and fatal when bad) by git_default_config without -w.
      writeSettings(this.config, () => 0);
      return;
    }
    this.writer = await import('../../store/write-object.js');
    this.settings = writeSettings(this.config, this.writer.parseSharedRepository);
    this.target = {
      objectsDir: this.repo.objectsDir,
      alternates: this.repo.alternates,
      algo: this.algo,
      looseCompression: this.settings.looseCompression,
      packCompression: this.settings.packCompression,
      sharedRepository: this.settings.sharedRepository,
      fsyncLoose: this.settings.fsyncLooseObjects,
      ...(this.o.concurrency !== undefined ? { concurrency: this.o.concurrency } : {}),
    };
  }

  /** `prefix_filename`: the argument as git names it after changing to the top of the work tree. */
  prefixed(arg: string): string {
    return isAbsolute(arg) || this.prefix === '' ? arg : this.prefix + arg;
  }

  /** Does conversion matter at all for what this run hashes? */
  get mayConvert(): boolean {
    return !this.o.noFilters && !this.o.literally && this.o.type === 'blob';
  }

  /** Which of `paths` (attribute paths, as seen from `cwd`) git would convert. */
  decide(paths: (string | Buffer)[], cwd: string): Decision[] {
    if (!this.mayConvert) return paths.map(() => 'identity');
    return paths.length === 0 ? [] : this.oracle.decide(paths, cwd);
  }

  /** Could git change, for one of `paths`, content that holds no CR (AttributeOracle.mayConvertWithoutCr)? */
  mayConvertWithoutCr(paths: Buffer[]): boolean {
    if (!this.mayConvert) return false;
    let dir: Buffer | undefined;
    for (const p of paths) {
      const slash = p.lastIndexOf(0x2f);
      // The answer is the directory's for a plain name in it: a sorted list asks once per directory.
      if (
        dir !== undefined &&
        slash + 1 === dir.length &&
        p.compare(dir, 0, dir.length, 0, slash + 1) === 0 &&
        plainName(p, slash + 1)
      )
        continue;
      if (this.oracle.mayConvertWithoutCr(p, this.base)) return true;
      dir = p.subarray(0, slash + 1);
    }
    return false;
  }

  decideAsync(paths: (string | Buffer)[], cwd: string): Promise<Decision[]> {
    if (!this.mayConvert) return Promise.resolve(paths.map(() => 'identity'));
    return this.oracle.decideAsync(paths, cwd);
  }

  // -- output ------------------------------------------------------------------------------------

  emit(hex: string): void {
    this.result.objects++;
    this.out += hex + '\n';
  }

  /** Hands the ids computed so far to the caller (git flushes each line; we flush each batch). */
  flush(): void {
    if (this.out === '') return;
    const text = this.out;
    this.out = '';
    this.hooks.onIds(text);
  }

  /**
   * Runs `git hash-object` for one item: git converts it exactly as it would. Not spawnSync: git
   * may wait on our standard input, and a signal to us must reach it (killOnSignal) meanwhile.
   */
  async delegate(d: Delegation): Promise<string> {
    this.flush();
    const r = await runHashObject(d, this.o);
    if (r.stderr !== '') this.hooks.onStderr?.(r.stderr);
    this.result.delegated++;
    return r.id;
  }

  // -- hashing and writing -----------------------------------------------------------------------

  /**
   * hash_fd: what git does with one open descriptor (`label` is git's `path`, maybe null). For a
   * `crlf` decision, content git would convert (a CR in it, or git's own reading path) is left
   * alone and false returned: the caller delegates it. `crlf-text` content is converted here.
   */
  async hashFd(
    fd: number,
    label: string | undefined,
    decision: Decision = 'identity',
  ): Promise<boolean> {
    const crlf = decision === 'crlf' || decision === 'crlf-text';
    const o = this.o;
    let st: Stats;
    try {
      st = fstatSync(fd);
    } catch (e) {
      throw this.unable(label, [], e);
    }
    if (!o.literally && !validType(o.type))
      throw new HashObjectError('bad-object', `invalid object type "${o.type}"`);
    const shown = label ?? '(null)';
    const indexing = label ?? '<unknown>';
    if (!st.isFile()) {
      if (crlf) return false; // a pipe is read once: git must be the one reading it
      // index_pipe / strbuf_read: everything in memory (a directory fails to read).
      await this.fromMemory(await this.readPipe(fd, label, null), shown);
      return true;
    }
    const size = st.size;
    if (size === 0) {
      // A file whose size stat cannot tell (/proc): index_core hashes "" for a size of 0, and
      // hash_literally reads to EOF (strbuf_read) whatever the size says.
      await this.fromMemory(
        o.literally ? await this.readPipe(fd, label, 0) : Buffer.alloc(0),
        shown,
      );
      return true;
    }
    if (!o.literally && o.type !== 'blob') {
      // index_core: commits, trees and tags are checked, so they are read whole (git maps them).
      await this.fromMemory(this.readWhole(fd, size, label, indexing), shown);
      return true;
    }
    // A path git may convert is read whole and written loose by git (index_core), never streamed to a pack.
    const packed = o.write && !o.literally && size > this.settings!.bigFileThreshold;
    if (crlf && packed) return false;
    const cr = crlf ? crScanner() : undefined;
    let id: Buffer;
    try {
      id = hashFdSync(fd, o.type, size, this.algo, indexing, this.readBuffer(size), cr?.inspect);
    } catch (e) {
      if (!o.literally || !(e instanceof ContentSizeError))
        throw this.readFailure(e, label, indexing);
      // hash_literally never trusted the size: what a read to EOF gives (a sysfs file, one that changed).
      await this.fromMemory(await this.readPipe(fd, label, 0), shown);
      return true;
    }
    if (cr?.seen) {
      if (decision !== 'crlf-text' || o.write) return false;
      await this.fromMemory(crlfToLf(this.readWhole(fd, size, label, indexing)), shown);
      return true;
    }
    if (o.write) await this.writeFrom(id, { fd, size, label: indexing }, packed, label);
    this.emit(toHex(id));
    return true;
  }

  /** strbuf_read from `from` (null: the descriptor's position) to EOF; git's OOM message when it never ends. */
  private async readPipe(
    fd: number,
    label: string | undefined,
    from: number | null,
  ): Promise<Buffer> {
    try {
      return await readToEnd(fd, undefined, from);
    } catch (e) {
      if (e instanceof OutOfMemory) throw e;
      throw this.unable(label, [], e);
    }
  }

  private readBuffer(size: number): Buffer {
    if (size < SMALL_READ) return (this.smallBuf ??= Buffer.allocUnsafeSlow(SMALL_READ));
    return (this.largeBuf ??= Buffer.allocUnsafeSlow(HASH_CHUNK));
  }

  private readWhole(fd: number, size: number, label: string | undefined, indexing: string): Buffer {
    try {
      return readFdExact(fd, size, indexing);
    } catch (e) {
      throw this.readFailure(e, label, indexing);
    }
  }

  private async writeFrom(
    id: Buffer,
    source: ContentSource,
    packed: boolean,
    label: string | undefined,
  ): Promise<void> {
    try {
      if (packed) await this.writePacked(id, source);
      else await this.writeLoose(this.o.type, id, source);
    } catch (e) {
      throw this.writeFailure(e, label);
    }
  }

  private async fromMemory(data: Buffer, shown: string): Promise<void> {
    const o = this.o;
    if (!o.literally) checkObjectFormat(o.type, data, this.algo, this.table);
    const h = new ObjectHasher(this.algo, o.type, data.length, shown);
    h.update(data);
    const id = h.digest();
    if (o.write)
      await this.writeFrom(
        id,
        { data, label: shown },
        false,
        shown === '(null)' ? undefined : shown,
      );
    this.emit(toHex(id));
  }

  private async writeLoose(type: string, id: Buffer, source: ContentSource): Promise<void> {
    const w = this.writer!;
    if (w.freshenObject(this.target!, id)) return;
    await w.writeLooseObject(this.target!, type, id, source);
    this.result.loose++;
  }

  private async writePacked(id: Buffer, source: ContentSource): Promise<void> {
    const w = this.writer!;
    // bulk-checkin's already_written: present anywhere means nothing to write (and no freshening).
    if (w.hasObject(this.target!, id)) return;
    const r = await w.writeBulkCheckinPack(this.target!, id, source);
    this.result.packs.push(r.pack);
  }

  private unable(label: string | undefined, details: string[], cause?: unknown): HashObjectError {
    const shown = label ?? '(null)';
    const msg = this.o.write ? `Unable to add ${shown} to database` : `Unable to hash ${shown}`;
    return new HashObjectError('io', msg, details, { cause });
  }

  private readFailure(e: unknown, label: string | undefined, indexing: string): HashObjectError {
    if (e instanceof ContentSizeError) return this.unable(label, e.details);
    if (e instanceof HashObjectError) return e;
    return this.unable(label, [`read error while indexing ${indexing}: ${strerror(e)}`], e);
  }

  private writeFailure(e: unknown, label: string | undefined): Error {
    if (e instanceof ContentSizeError) return this.unable(label, e.details);
    if (e instanceof HashObjectError) {
      if (e instanceof UnableToWriteObject) return this.unable(label, e.details, e);
      return e;
    }
    const err = e as NodeJS.ErrnoException;
    if (typeof err?.code === 'string')
      return this.unable(label, [`unable to write loose object file: ${strerror(e)}`], e);
    return e as Error;
  }

  /** xopen + hash_fd, or the delegated git for a path git would convert. */
  async hashItem(item: Item, decision: Decision, delegation: () => Delegation): Promise<void> {
    this.hooks.signal?.throwIfAborted();
    if (decision === 'delegate') {
      this.emit(await this.delegate(delegation()));
      return;
    }
    if (item.open === undefined) {
      // --stdin is read once: content-dependent decisions are git's (the caller delegates them).
      await this.hashFd(this.o.stdinFd ?? 0, item.vpath);
      return;
    }
    let fd: number;
    try {
      fd = await openForReading(openTarget(item.open, this.base, this.baseSlash));
    } catch (e) {
      throw new HashObjectError(
        'io',
        `could not open '${item.shown}' for reading: ${strerror(e)}`,
        [],
        { cause: e },
      );
    }
    let done: boolean;
    try {
      done = await this.hashFd(fd, item.vpath, decision);
    } finally {
      closeSync(fd);
    }
    if (!done) this.emit(await this.delegate(delegation()));
  }

  /** Ids of regular files ahead of their turn (no -w, blobs): see pre-hash.ts. */
  preHash(paths: Buffer[]): (PreHashed | undefined)[] {
    const targets = joinTargets(paths, this.baseSlash);
    if (this.pool !== undefined) return this.pool.run(this.algo, targets);
    // Files named on the command line: few, and a named pipe among them must not be opened twice.
    this.hasher ??= new BlobPreHasher(this.algo, true);
    return splitPaths(targets).map((p) => this.hasher!.hash(p));
  }

  close(): void {
    this.pool?.close();
  }
}
