import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { GitError } from '../errors.js';
import { SHA1, toHex, type HashAlgo } from '../hash/algo.js';
import {
  ContentSizeError,
  HASH_CHUNK,
  HashObjectError,
  ObjectHasher,
  ObjectTypeTable,
  checkObjectFormat,
  hashFdSync,
  readFdExact,
} from '../hash/hash-object.js';
import { GitConfig, parseConfigBool, parseConfigInt } from '../store/config.js';
import { discoverRepository, type Repository } from '../store/repo.js';
import type { ObjectWriteTarget } from '../store/write-object.js';

/**
 * `git hash-object`, compatible in interface, output and exit codes (builtin/hash-object.c of git
 * 2.39), but without `index_stream`'s deflate when nothing is written: content is streamed once
 * through the hash. Content conversion (attributes, `core.autocrlf`, clean filters) is never
 * imitated: when git might convert a path, `git hash-object` itself is run for it.
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
  /** geteuid(), for discovery's ownership check. */
  euid?: number | undefined;
  /** Where `--stdin` and `--stdin-paths` read (default 0). */
  stdinFd?: number;
  /** Deflate threads with `-w` (default: available cores). */
  concurrency?: number;
}

export interface HashObjectHooks {
  /** Each id, in order, as soon as it is known (git prints and flushes each line). */
  onId(hex: string): void;
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

/** A delegated `git hash-object` failed: its stderr and exit code are the command's. */
export class DelegatedGitFailed extends Error {
  constructor(
    readonly status: number,
    readonly stderr: string,
  ) {
    super(stderr.trim() || `git hash-object exited with ${status}`);
    this.name = 'DelegatedGitFailed';
  }
}

/** git's usage errors of hash-object (checked after the repository setup, as git does). */
export function usageProblem(o: Pick<HashObjectOptions, 'stdin' | 'stdinPaths' | 'files' | 'path' | 'noFilters'>): string | undefined {
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

// ---------------------------------------------------------------------------------------------
// Configuration, read as git_default_config does for the keys that matter here.

/** zlib levels: -1 (zlib's default) or 0..9, else git dies. */
function compressionLevel(config: GitConfig, key: string, what: string): number | undefined {
  let level: number | undefined;
  for (const v of config.getAll(key)) {
    const n = parseConfigInt(v);
    if (n === undefined || !Number.isSafeInteger(n)) {
      throw new GitError('bad-config', `bad numeric config value '${v}' for '${key}': invalid unit`);
    }
    if (n !== -1 && (n < 0 || n > 9)) throw new GitError('bad-config', `bad ${what} compression level ${n}`);
    level = n;
  }
  return level;
}

export interface WriteSettings {
  looseCompression: number;
  packCompression: number;
  bigFileThreshold: number;
  sharedRepository: number;
}

/** `core.looseCompression`, `pack.compression` (both defaulting to `core.compression`), `core.bigFileThreshold`. */
export function writeSettings(config: GitConfig, parseShared: (v: string | null | undefined) => number): WriteSettings {
  const core = compressionLevel(config, 'core.compression', 'zlib');
  const loose = compressionLevel(config, 'core.loosecompression', 'zlib');
  const pack = compressionLevel(config, 'pack.compression', 'pack');
  let bigFileThreshold = 512 * 1024 * 1024;
  const t = config.get('core.bigfilethreshold');
  if (t !== undefined) {
    const n = parseConfigInt(t);
    if (n === undefined || n < 0 || !Number.isSafeInteger(n)) {
      throw new GitError('bad-config', `bad numeric config value '${t}' for 'core.bigfilethreshold': invalid unit`);
    }
    bigFileThreshold = n;
  }
  const sharedAll = config.has('core.sharedrepository') ? rawValue(config, 'core.sharedrepository') : undefined;
  return {
    looseCompression: loose ?? core ?? 1,
    packCompression: pack ?? core ?? -1,
    bigFileThreshold,
    sharedRepository: parseShared(sharedAll),
  };
}

/** The last value of a key, null for a bare `key` (git's "true" without `=`). */
function rawValue(config: GitConfig, key: string): string | null {
  // GitConfig.get maps a bare key to ''; getBool tells the two apart.
  const v = config.get(key) ?? '';
  if (v !== '') return v;
  try {
    return config.getBool(key) === true ? null : v;
  } catch {
    return v;
  }
}

type AutoCrlf = false | true | 'input';

function autoCrlf(config: GitConfig): AutoCrlf {
  const v = config.get('core.autocrlf');
  if (v === undefined) return false;
  if (v.toLowerCase() === 'input') return 'input';
  const b = config.getBool('core.autocrlf');
  return b === true;
}

// ---------------------------------------------------------------------------------------------
// Would git convert this path? (convert.c: convert_attrs and what convert_to_git does with it.)

type AttrValue = { k: 'true' } | { k: 'false' } | { k: 'unspecified' } | { k: 'string'; v: string };

/**
 * What a `git check-attr --all` report may stand for: `--all` omits unspecified attributes, so an
 * absent one is unspecified; "set" and "unset" may be the states or strings spelled that way.
 */
function interpretations(reported: string | undefined): AttrValue[] {
  if (reported === undefined) return [{ k: 'unspecified' }];
  if (reported === 'set') return [{ k: 'true' }, { k: 'string', v: 'set' }];
  if (reported === 'unset') return [{ k: 'false' }, { k: 'string', v: 'unset' }];
  return [{ k: 'string', v: reported }];
}

type CrlfAction = 'undefined' | 'binary' | 'text' | 'input' | 'auto';

/** git_path_check_crlf */
function checkCrlf(v: AttrValue): CrlfAction {
  if (v.k === 'true') return 'text';
  if (v.k === 'false') return 'binary';
  if (v.k === 'string' && v.v === 'input') return 'input';
  if (v.k === 'string' && v.v === 'auto') return 'auto';
  return 'undefined';
}

/** convert_attrs + convert_to_git: does this combination leave the content unchanged? */
function identityFor(
  a: { text: AttrValue; crlf: AttrValue; eol: AttrValue; ident: AttrValue; filter: AttrValue; encoding: AttrValue },
  auto: AutoCrlf,
  hasDriver: (name: string) => boolean,
): boolean {
  let action = checkCrlf(a.text);
  if (action === 'undefined') action = checkCrlf(a.crlf);
  if (action !== 'binary') {
    const eol = a.eol.k === 'string' && (a.eol.v === 'lf' || a.eol.v === 'crlf');
    if (eol) return false; // text with a fixed eol (or auto with one): content dependent
  }
  if (action === 'undefined') action = auto === false ? 'binary' : 'auto';
  if (action !== 'binary') return false;
  if (a.ident.k === 'true') return false;
  if (a.filter.k === 'string' && hasDriver(a.filter.v)) return false;
  if (a.encoding.k === 'true' || a.encoding.k === 'false') return false; // git dies: let it
  if (a.encoding.k === 'string' && a.encoding.v !== '') return false;
  return true;
}

/** True when no reading of the report can make git convert the content. */
export function attrsAreIdentity(report: Map<string, string>, auto: AutoCrlf, hasDriver: (name: string) => boolean): boolean {
  const names = ['text', 'crlf', 'eol', 'ident', 'filter', 'working-tree-encoding'] as const;
  const options = names.map((n) => interpretations(report.get(n)));
  const pick = new Array<number>(names.length).fill(0);
  for (;;) {
    const v = (i: number): AttrValue => options[i]![pick[i]!]!;
    if (!identityFor({ text: v(0), crlf: v(1), eol: v(2), ident: v(3), filter: v(4), encoding: v(5) }, auto, hasDriver)) return false;
    let i = 0;
    while (i < names.length && ++pick[i]! >= options[i]!.length) pick[i++] = 0;
    if (i === names.length) return true;
  }
}

/** `git check-attr -z` output: `path\0attr\0value\0` records, grouped by path. */
export function parseCheckAttr(out: Buffer): Map<string, Map<string, string>> {
  const fields = out.toString('utf8').split('\0');
  const byPath = new Map<string, Map<string, string>>();
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const path = fields[i]!;
    let m = byPath.get(path);
    if (!m) byPath.set(path, (m = new Map()));
    m.set(fields[i + 1]!, fields[i + 2]!);
  }
  return byPath;
}

function envBool(v: string | undefined): boolean {
  if (v === undefined) return false;
  return parseConfigBool(v) ?? true;
}

function fileExists(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Places git reads a system-wide `gitattributes` from (`$(sysconfdir)/gitattributes`): /etc for a
 * /usr install, else `<prefix>/etc`, the prefix taken from where `git` is on PATH. git 2.39 has no
 * way to print this path; it is only consulted where `git check-attr` cannot be asked.
 */
function systemAttributeCandidates(env: NodeJS.ProcessEnv): string[] {
  const out = new Set<string>(['/etc/gitattributes', '/usr/local/etc/gitattributes']);
  for (const d of (env.PATH ?? '').split(delimiter)) {
    if (d === '') continue;
    const g = join(d, 'git');
    if (!fileExists(g)) continue;
    try {
      out.add(join(dirname(dirname(realpathSync(g))), 'etc', 'gitattributes'));
    } catch {
      // unreadable link: the fixed candidates still apply
    }
    break;
  }
  if (env.GIT_EXEC_PATH) out.add(join(dirname(dirname(env.GIT_EXEC_PATH)), 'etc', 'gitattributes'));
  return [...out];
}

// ---------------------------------------------------------------------------------------------

/** strerror(3) wording for the errno codes opening a file commonly meets. */
const STRERROR: Record<string, string> = {
  ENOENT: 'No such file or directory',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  ELOOP: 'Too many levels of symbolic links',
  ENAMETOOLONG: 'File name too long',
  EMFILE: 'Too many open files',
  ENFILE: 'Too many open files in system',
  EIO: 'Input/output error',
  ENXIO: 'No such device or address',
  EOVERFLOW: 'Value too large for defined data type',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
};

export function strerror(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err && typeof err.code === 'string' && STRERROR[err.code]) return STRERROR[err.code]!;
  const m = /^[A-Z]+: (.*?)(?:, \w+ .*)?$/.exec(err?.message ?? '');
  const s = m ? m[1]! : String(err?.message ?? e);
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A read that waits on a non-blocking descriptor instead of failing with EAGAIN. */
function readBlocking(fd: number, buf: Buffer, off: number, len: number): number {
  for (;;) {
    try {
      return readSync(fd, buf, off, len, null);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EAGAIN') {
        sleepMs(2);
        continue;
      }
      if ((e as NodeJS.ErrnoException).code === 'EOF') return 0;
      throw e;
    }
  }
}

/** strbuf_read: everything up to EOF (pipes, terminals, character devices). */
function readToEnd(fd: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buf = Buffer.allocUnsafe(Math.min(HASH_CHUNK, Math.max(8192, total)));
    const n = readBlocking(fd, buf, 0, buf.length);
    if (n === 0) break;
    chunks.push(n === buf.length ? buf : buf.subarray(0, n));
    total += n;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/** git's `unquote_c_style` (the closing quote ends the name; what follows is ignored). */
export function unquoteCStyle(line: Buffer): Buffer | undefined {
  if (line[0] !== 0x22) return undefined;
  const out: number[] = [];
  let i = 1;
  for (;;) {
    if (i >= line.length) return undefined;
    let c = line[i++]!;
    if (c === 0x22) return Buffer.from(out);
    if (c !== 0x5c) {
      out.push(c);
      continue;
    }
    if (i >= line.length) return undefined;
    c = line[i++]!;
    switch (c) {
      case 0x61: out.push(7); break; // \a
      case 0x62: out.push(8); break; // \b
      case 0x66: out.push(12); break; // \f
      case 0x6e: out.push(10); break; // \n
      case 0x72: out.push(13); break; // \r
      case 0x74: out.push(9); break; // \t
      case 0x76: out.push(11); break; // \v
      case 0x5c: case 0x22: out.push(c); break;
      case 0x30: case 0x31: case 0x32: case 0x33: {
        let ac = (c - 0x30) << 6;
        const d1 = line[i++];
        if (d1 === undefined || d1 < 0x30 || d1 > 0x37) return undefined;
        ac |= (d1 - 0x30) << 3;
        const d2 = line[i++];
        if (d2 === undefined || d2 < 0x30 || d2 > 0x37) return undefined;
        ac |= d2 - 0x30;
        out.push(ac);
        break;
      }
      default:
        return undefined;
    }
  }
}

/** The type byte of a pack entry for a type name hash-object accepts without --literally. */
function validType(type: string): boolean {
  return type === 'commit' || type === 'tree' || type === 'blob' || type === 'tag';
}

/** One thing to hash: a path (as a string or raw bytes from --stdin-paths) or the standard input. */
interface Item {
  /** Opened relative to `base` unless absolute; undefined for --stdin. */
  open: string | Buffer | undefined;
  /** git's `path` for conversion and messages (`vpath`), or undefined (shown as "(null)"). */
  vpath: string | undefined;
  /** How git names the file it could not open (the prefixed argument). */
  shown: string;
}

type Decision = 'identity' | 'delegate';

class Session {
  readonly algo: HashAlgo;
  /** The directory git works from after setup: the top of the work tree when inside it. */
  readonly base: string;
  /** git's `prefix`: the cwd below the top of the work tree, with a trailing slash, or ''. */
  readonly prefix: string;
  readonly table = new ObjectTypeTable();
  private configCache: GitConfig | undefined;
  private target: ObjectWriteTarget | undefined;
  private settings: WriteSettings | undefined;
  private writer: typeof import('../store/write-object.js') | undefined;
  private readonly hashBuf = Buffer.allocUnsafe(HASH_CHUNK);
  readonly result: HashObjectResult = { objects: 0, loose: 0, packs: [], delegated: 0 };

  constructor(
    readonly o: HashObjectOptions,
    readonly hooks: HashObjectHooks,
    readonly repo: Repository | undefined,
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
    this.prefix = prefix;
  }

  get config(): GitConfig {
    this.configCache ??= this.repo?.config ?? GitConfig.load(undefined, this.o.env);
    return this.configCache;
  }

  /** git_default_config runs before anything is hashed: bad compression levels die early. */
  async prepareWrite(): Promise<void> {
    if (this.repo === undefined || !this.o.write) {
      // Still parsed (and fatal when bad) by git_default_config without -w.
      writeSettings(this.config, () => 0);
      return;
    }
    this.writer = await import('../store/write-object.js');
    this.settings = writeSettings(this.config, this.writer.parseSharedRepository);
    this.target = {
      objectsDir: this.repo.objectsDir,
      alternates: this.repo.alternates,
      algo: this.algo,
      looseCompression: this.settings.looseCompression,
      packCompression: this.settings.packCompression,
      sharedRepository: this.settings.sharedRepository,
      ...(this.o.concurrency !== undefined ? { concurrency: this.o.concurrency } : {}),
    };
  }

  /** `prefix_filename`: the argument as git names it after changing to the top of the work tree. */
  prefixed(arg: string): string {
    return isAbsolute(arg) || this.prefix === '' ? arg : this.prefix + arg;
  }

  // -- conversion --------------------------------------------------------------------------------

  private hasDriver = (name: string): boolean => {
    const head = `filter.${name}.`;
    return this.config.keys().some((k) => k.startsWith(head) && k.indexOf('.', head.length) < 0);
  };

  /** Which of `paths` (attribute paths, as seen from `cwd`) git would convert. */
  decide(paths: (string | Buffer)[], cwd: string): Decision[] {
    if (paths.length === 0) return [];
    const auto = autoCrlf(this.config);
    const out: Decision[] = new Array<Decision>(paths.length).fill('delegate');
    const ask = new Set<number>();
    for (let i = 0; i < paths.length; i++) if (this.insideRepository(paths[i]!, cwd)) ask.add(i);
    const reports = ask.size > 0 ? this.checkAttr([...ask].map((i) => paths[i]!), cwd) : undefined;
    for (let i = 0; i < paths.length; i++) {
      const report = reports?.get(pathString(paths[i]!));
      if (reports !== undefined && ask.has(i)) {
        out[i] = attrsAreIdentity(report ?? new Map(), auto, this.hasDriver) ? 'identity' : 'delegate';
      } else {
        out[i] = this.conversionImpossible(paths[i]!, cwd, auto) ? 'identity' : 'delegate';
      }
    }
    return out;
  }

  /** Can `git check-attr` answer for this path (it refuses paths outside the repository)? */
  private insideRepository(p: string | Buffer, cwd: string): boolean {
    if (this.repo === undefined) return false;
    const s = pathString(p);
    if (s === '' || s.includes('\0')) return false;
    return isInside(this.repo.workTree ?? cwd, resolve(cwd, s));
  }

  /** `git check-attr --all -z` as hash-object would see attributes: the index is not read. */
  private checkAttr(paths: (string | Buffer)[], cwd: string): Map<string, Map<string, string>> | undefined {
    const env: NodeJS.ProcessEnv = { ...this.o.env };
    if (this.o.gitDir !== undefined) env.GIT_DIR = this.o.gitDir;
    // hash-object never reads the index, so .gitattributes known only to the index do not apply.
    env.GIT_INDEX_FILE = join(this.repo!.gitDir, 'repack-ts-no-index', 'index');
    const input = Buffer.concat(paths.flatMap((p) => [typeof p === 'string' ? Buffer.from(p) : p, Buffer.from([0])]));
    const r = spawnSync('git', ['check-attr', '--all', '-z', '--stdin'], { cwd, env, input, maxBuffer: 1 << 28 });
    if (r.error || r.status !== 0) return undefined;
    return parseCheckAttr(r.stdout);
  }

  /**
   * Without `git check-attr` (no repository, or a path outside it): git can only convert if
   * `core.autocrlf` is on or some attributes file that applies exists.
   */
  private conversionImpossible(p: string | Buffer, cwd: string, auto: AutoCrlf): boolean {
    if (auto !== false) return false;
    const env = this.o.env;
    const home = env.HOME;
    const configured = this.config.get('core.attributesfile');
    let global: string | undefined;
    if (configured !== undefined && configured !== '') {
      global = configured.startsWith('~/') && home ? join(home, configured.slice(2)) : resolve(cwd, configured);
    } else if (env.XDG_CONFIG_HOME) global = join(env.XDG_CONFIG_HOME, 'git', 'attributes');
    else if (home) global = join(home, '.config', 'git', 'attributes');
    if (global !== undefined && fileExists(global)) return false;
    if (!envBool(env.GIT_ATTR_NOSYSTEM) && systemAttributeCandidates(env).some(fileExists)) return false;
    if (this.repo !== undefined) {
      if (fileExists(join(this.repo.commonDir, 'info', 'attributes'))) return false;
      const root = this.repo.workTree;
      if (root !== undefined) {
        if (fileExists(join(root, '.gitattributes'))) return false;
        // Every directory the path names, resolved from the top of the work tree.
        const parts = pathString(p).split('/');
        let acc = '';
        for (let i = 0; i < parts.length - 1; i++) {
          acc = i === 0 ? parts[0]! : acc + '/' + parts[i]!;
          if (fileExists(join(resolve(root, acc === '' ? '/' : acc), '.gitattributes'))) return false;
          if (fileExists(join(resolve(cwd, acc === '' ? '/' : acc), '.gitattributes'))) return false;
        }
      }
    }
    return true;
  }

  /** Runs `git hash-object` for one item: git converts it exactly as it would. */
  delegate(args: string[], input: Buffer | 'stdin'): string {
    const env: NodeJS.ProcessEnv = { ...this.o.env };
    if (this.o.gitDir !== undefined) env.GIT_DIR = this.o.gitDir;
    const full = ['hash-object', ...(this.o.write ? ['-w'] : []), ...args];
    const r = spawnSync('git', full, {
      cwd: this.o.cwd,
      env,
      stdio: [input === 'stdin' ? (this.o.stdinFd ?? 0) : 'pipe', 'pipe', 'pipe'],
      ...(input === 'stdin' ? {} : { input }),
      maxBuffer: 1 << 26,
    });
    if (r.error) throw new GitError('io', `cannot run git hash-object: ${r.error.message}`);
    const stderr = r.stderr?.toString('utf8') ?? '';
    if (r.status !== 0) throw new DelegatedGitFailed(r.status ?? 128, stderr);
    if (stderr !== '') this.hooks.onStderr?.(stderr);
    this.result.delegated++;
    return r.stdout.toString('latin1').trim();
  }

  // -- hashing and writing -----------------------------------------------------------------------

  private emit(hex: string): void {
    this.result.objects++;
    this.hooks.onId(hex);
  }

  /** hash_fd: what git does with one open descriptor (`label` is git's `path`, maybe null). */
  async hashFd(fd: number, label: string | undefined): Promise<void> {
    const o = this.o;
    let st: Stats;
    try {
      st = fstatSync(fd);
    } catch (e) {
      throw this.unable(label, [], e);
    }
    if (!o.literally && !validType(o.type)) throw new HashObjectError('bad-object', `invalid object type "${o.type}"`);
    const shown = label ?? '(null)';
    const indexing = label ?? '<unknown>';
    let id: Buffer;
    if (!st.isFile()) {
      // index_pipe / strbuf_read: everything in memory (a directory fails to read).
      let data: Buffer;
      try {
        data = readToEnd(fd);
      } catch (e) {
        throw this.unable(label, [], e);
      }
      await this.fromMemory(data, shown);
      return;
    }
    const size = st.size;
    if (!o.literally && o.type !== 'blob') {
      // index_core: commits, trees and tags are checked, so they are read whole (git maps them).
      let data: Buffer;
      try {
        data = readFdExact(fd, size, indexing);
      } catch (e) {
        throw this.readFailure(e, label, indexing);
      }
      await this.fromMemory(data, shown);
      return;
    }
    try {
      id = hashFdSync(fd, o.type, size, this.algo, indexing, this.hashBuf);
    } catch (e) {
      throw this.readFailure(e, label, indexing);
    }
    if (o.write) {
      const source = { fd, size, label: indexing };
      try {
        if (!o.literally && size > this.settings!.bigFileThreshold) await this.writePacked(id, source);
        else await this.writeLoose(o.type, id, source);
      } catch (e) {
        throw this.writeFailure(e, label);
      }
    }
    this.emit(toHex(id));
  }

  private async fromMemory(data: Buffer, shown: string): Promise<void> {
    const o = this.o;
    if (!o.literally) checkObjectFormat(o.type, data, this.algo, this.table);
    const h = new ObjectHasher(this.algo, o.type, data.length, shown);
    h.update(data);
    const id = h.digest();
    if (o.write) {
      try {
        await this.writeLoose(o.type, id, { data, label: shown });
      } catch (e) {
        throw this.writeFailure(e, shown === '(null)' ? undefined : shown);
      }
    }
    this.emit(toHex(id));
  }

  private async writeLoose(type: string, id: Buffer, source: import('../store/write-object.js').ContentSource): Promise<void> {
    const w = this.writer!;
    if (w.freshenObject(this.target!, id)) return;
    await w.writeLooseObject(this.target!, type, id, source);
    this.result.loose++;
  }

  private async writePacked(id: Buffer, source: import('../store/write-object.js').ContentSource): Promise<void> {
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
      if (e.message === 'unable to write object') return this.unable(label, e.details, e);
      return e;
    }
    const err = e as NodeJS.ErrnoException;
    if (typeof err?.code === 'string') return this.unable(label, [`unable to write loose object file: ${strerror(e)}`], e);
    return e as Error;
  }

  /** xopen + hash_fd, or the delegated git for a path git would convert. */
  async hashItem(item: Item, decision: Decision, delegateArgs: () => { args: string[]; input: Buffer | 'stdin' }): Promise<void> {
    this.hooks.signal?.throwIfAborted();
    if (decision === 'delegate') {
      const d = delegateArgs();
      this.emit(this.delegate(d.args, d.input));
      return;
    }
    if (item.open === undefined) {
      await this.hashFd(this.o.stdinFd ?? 0, item.vpath);
      return;
    }
    let fd: number;
    try {
      fd = openSync(openTarget(item.open, this.base), 'r');
    } catch (e) {
      throw new HashObjectError('io', `could not open '${item.shown}' for reading: ${strerror(e)}`, [], { cause: e });
    }
    try {
      await this.hashFd(fd, item.vpath);
    } finally {
      closeSync(fd);
    }
  }

  /** Does conversion matter at all for what this run hashes? */
  get mayConvert(): boolean {
    return !this.o.noFilters && !this.o.literally && this.o.type === 'blob';
  }
}

/** Is `abs` the directory `root` or below it? */
function isInside(root: string, abs: string): boolean {
  const rel = relative(root, abs);
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + sep) && !isAbsolute(rel));
}

function pathString(p: string | Buffer): string {
  return typeof p === 'string' ? p : p.toString('utf8');
}

function openTarget(p: string | Buffer, base: string): string | Buffer {
  if (p.length === 0) {
    // open("") is ENOENT; resolving it against the base would open the directory instead.
    throw Object.assign(new Error("ENOENT: no such file or directory, open ''"), { code: 'ENOENT' });
  }
  if (typeof p === 'string') return resolve(base, p);
  if (p[0] === 0x2f) return p;
  return Buffer.concat([Buffer.from(base.endsWith('/') ? base : base + '/'), p]);
}

/** Opens the repository as hash-object does: required with -w, optional without. */
export function openHashObjectRepository(o: Pick<HashObjectOptions, 'write' | 'cwd' | 'gitDir' | 'env' | 'euid'>): Repository | undefined {
  try {
    return discoverRepository({ cwd: o.cwd, gitDir: o.gitDir, env: o.env, euid: o.euid });
  } catch (e) {
    // setup_git_directory_gently: outside a repository, or in another user's, is "no repository".
    if (!o.write && e instanceof GitError && (e.code === 'not-a-repository' || e.code === 'dubious-ownership')) return undefined;
    throw e;
  }
}

/**
 * Runs hash-object: `--stdin` first, then the files, then `--stdin-paths`, printing each id through
 * `hooks.onId` as it is computed. Usage problems throw GitError('usage') after the repository
 * setup, like git.
 */
export async function hashObjects(o: HashObjectOptions, hooks: HashObjectHooks): Promise<HashObjectResult> {
  const repo = openHashObjectRepository(o);
  const s = new Session(o, hooks, repo);
  await s.prepareWrite();
  const problem = usageProblem(o);
  if (problem !== undefined) throw new GitError('usage', problem);
  const vpath = o.path !== undefined ? s.prefixed(o.path) : undefined;

  if (o.stdin) {
    const decision: Decision = s.mayConvert && vpath !== undefined ? s.decide([o.path!], o.cwd)[0]! : 'identity';
    await s.hashItem({ open: undefined, vpath, shown: '' }, decision, () => ({ args: ['--stdin', `--path=${o.path}`], input: 'stdin' }));
  }

  if (o.files.length > 0) {
    let decisions: Decision[];
    if (!s.mayConvert) decisions = o.files.map(() => 'identity');
    else if (o.path !== undefined) {
      const d = s.decide([o.path], o.cwd)[0]!;
      decisions = o.files.map(() => d);
    }
    else decisions = s.decide(o.files, o.cwd);
    for (let i = 0; i < o.files.length; i++) {
      const arg = o.files[i]!;
      const shown = s.prefixed(arg);
      const label = o.noFilters ? undefined : (vpath ?? shown);
      await s.hashItem({ open: shown, vpath: label, shown }, decisions[i]!, () => ({
        args: [...(o.type !== 'blob' ? ['-t', o.type] : []), ...(o.path !== undefined ? [`--path=${o.path}`] : []), '--', arg],
        input: Buffer.alloc(0),
      }));
    }
  }

  if (o.stdinPaths) await hashStdinPaths(s, hooks);
  return s.result;
}

/** hash_stdin_paths: one path per line (C-quoted if it starts with `"`), relative to the top. */
async function hashStdinPaths(s: Session, hooks: HashObjectHooks): Promise<void> {
  const fd = s.o.stdinFd ?? 0;
  const buf = Buffer.allocUnsafe(64 * 1024);
  let pending = Buffer.alloc(0);
  let eof = false;
  while (!eof) {
    hooks.signal?.throwIfAborted();
    const n = readBlocking(fd, buf, 0, buf.length);
    if (n === 0) eof = true;
    const data = n === 0 ? pending : Buffer.concat([pending, buf.subarray(0, n)]);
    const lines: Buffer[] = [];
    let start = 0;
    for (;;) {
      const nl = data.indexOf(0x0a, start);
      if (nl < 0) break;
      lines.push(data.subarray(start, nl));
      start = nl + 1;
    }
    pending = Buffer.from(data.subarray(start));
    if (eof && pending.length > 0) {
      lines.push(pending);
      pending = Buffer.alloc(0);
    }
    if (lines.length === 0) continue;
    // strbuf_getline drops the LF and one CR before it; a quoted line is unquoted.
    const items = lines.map((raw) => {
      let line = raw.length > 0 && raw[raw.length - 1] === 0x0d ? raw.subarray(0, raw.length - 1) : raw;
      if (line[0] === 0x22) {
        const u = unquoteCStyle(line);
        if (u === undefined) return { raw, path: undefined };
        line = u;
      }
      const nul = line.indexOf(0);
      return { raw, path: nul >= 0 ? line.subarray(0, nul) : line };
    });
    const firstBad = items.findIndex((it) => it.path === undefined);
    const good = firstBad < 0 ? items : items.slice(0, firstBad);
    const decisions: Decision[] = s.mayConvert ? s.decide(good.map((it) => it.path!), s.base) : good.map(() => 'identity');
    for (let i = 0; i < good.length; i++) {
      const it = good[i]!;
      const text = it.path!.toString('utf8');
      await s.hashItem({ open: it.path!, vpath: s.o.noFilters ? undefined : text, shown: text }, decisions[i]!, () => ({
        args: [...(s.o.type !== 'blob' ? ['-t', s.o.type] : []), '--stdin-paths'],
        input: Buffer.concat([it.raw, Buffer.from('\n')]),
      }));
    }
    if (firstBad >= 0) throw new HashObjectError('io', 'line is badly quoted');
  }
}
