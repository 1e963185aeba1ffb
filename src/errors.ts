import { getSystemErrorMap } from 'node:util';

/**
 * Errors are values with a stable code and, where it applies, the file, offset and object they
 * concern, and for a failed system call its errno, syscall and path (Node's SystemError fields).
 * Codecs throw these; only cli/ turns one into `fatal: …` and an exit code (128, or 129 for
 * usage). The library API (src/index.ts) throws nothing else: it is exported as GitRepackError.
 * A wrapping error keeps the inner one as `cause` and takes its fields, never its text.
 */
export type ErrorCode =
  | 'usage'
  | 'not-a-repository'
  | 'dubious-ownership'
  | 'bad-config'
  | 'bad-pack'
  | 'bad-idx'
  | 'bad-rev'
  | 'bad-bitmap'
  | 'bad-object'
  | 'bad-delta'
  | 'missing-object'
  | 'io'
  | 'locked'
  | 'verify-failed'
  | 'unsupported'
  /** The operation's AbortSignal fired (library API only; the CLI exits 130). */
  | 'aborted'
  /** A bug, not bad input (library API only). */
  | 'internal';

export interface ErrorWhere {
  file?: string | undefined;
  offset?: number | undefined;
  /** The object's id in hex. */
  objectId?: string | undefined;
  /** What is wrong, without the place (the message names the file and offset too). */
  detail?: string | undefined;
  cause?: unknown;
  /** A failed system call's code (`ENOENT`), as Node's SystemError `code`. */
  errno?: string | undefined;
  syscall?: string | undefined;
  /** The path the system call was given (the shown one: it may differ from `file`). */
  path?: string | undefined;
}

export class GitRepackError extends Error {
  readonly code: ErrorCode;
  readonly file: string | undefined;
  readonly offset: number | undefined;
  readonly objectId: string | undefined;
  /**
   * What is wrong without where: for a reader that reports the file and offset in fields of its
   * own (verify's problems, the rewrite's message naming the object) rather than cutting the text.
   */
  readonly detail: string;
  /** A failed system call's code (`ENOENT`, `ENOSPC`…): Node's SystemError `code`. */
  readonly errno: string | undefined;
  readonly syscall: string | undefined;
  readonly path: string | undefined;

  constructor(code: ErrorCode, message: string, where?: ErrorWhere) {
    super(message, where?.cause !== undefined ? { cause: where.cause } : undefined);
    this.name = 'GitRepackError';
    this.code = code;
    this.file = where?.file;
    this.offset = where?.offset;
    this.objectId = where?.objectId;
    this.detail = where?.detail ?? message;
    this.errno = where?.errno;
    this.syscall = where?.syscall;
    this.path = where?.path;
  }

  /** The same error with a line of advice after it (git's `advise`); this one is its cause. */
  withAdvice(advice: string): GitRepackError {
    return new GitRepackError(this.code, `${this.message}\n${advice}`, {
      file: this.file,
      offset: this.offset,
      objectId: this.objectId,
      detail: this.detail,
      cause: this,
      errno: this.errno,
      syscall: this.syscall,
      path: this.path,
    });
  }
}

/** The name the code base uses; one class under two names. */
export { GitRepackError as GitError };

/**
 * A format error in a pack, index or object: always names the file and offset; `label` says
 * which file it is when that helps (`new pack`, `new index`).
 */
export function corrupt(
  code: ErrorCode,
  file: string,
  offset: number,
  what: string,
  label?: string,
  cause?: unknown,
): GitRepackError {
  return new GitRepackError(
    code,
    `${label === undefined ? '' : `${label} `}${file}: ${what} at offset ${offset}`,
    { file, offset, detail: what, cause },
  );
}

/** glibc's strerror() texts, which git prints (`die_errno`), for the codes Node names instead. */
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
  ENXIO: 'No such device or address',
  EBADF: 'Bad file descriptor',
  EAGAIN: 'Resource temporarily unavailable',
  ENOMEM: 'Cannot allocate memory',
  EACCES: 'Permission denied',
  EBUSY: 'Device or resource busy',
  EEXIST: 'File exists',
  EXDEV: 'Invalid cross-device link',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EINVAL: 'Invalid argument',
  ENFILE: 'Too many open files in system',
  EMFILE: 'Too many open files',
  ETXTBSY: 'Text file busy',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EPIPE: 'Broken pipe',
  ENAMETOOLONG: 'File name too long',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Too many levels of symbolic links',
  EOVERFLOW: 'Value too large for defined data type',
  EDQUOT: 'Disk quota exceeded',
  ESTALE: 'Stale file handle',
};

/** The Node/libuv errno number of each code, for the codes the table above lacks. */
let uvCodes: Map<string, number> | undefined;

/**
 * strerror(3) for an errno code, in glibc's words as git prints them; a code not in the table
 * gets libuv's description, capitalised as glibc's are.
 */
export function strerror(code: string): string {
  const known = STRERROR[code];
  if (known !== undefined) return known;
  uvCodes ??= new Map([...getSystemErrorMap()].map(([n, [name]]) => [name, n]));
  const n = uvCodes.get(code);
  const text = n === undefined ? undefined : getSystemErrorMap().get(n)?.[1];
  return text === undefined ? code : text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * strerror(3) of what a system call threw, from the error's fields (Node's `code`, or ours
 * `errno`); glibc's "Unknown error" for anything else.
 */
export function errnoText(e: unknown): string {
  const code =
    e instanceof GitRepackError ? e.errno : (e as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? strerror(code) : 'Unknown error';
}

/**
 * What a codec library said (zlib's `strm->msg`, zstd's error name, a delta's range check), for
 * the error that wraps it and names the place: git prints zlib's text too (`git_inflate`).
 */
export function codecDiagnostic(e: unknown): string {
  if (e instanceof GitRepackError) return e.detail;
  return e instanceof Error ? e.message : String(e);
}

/**
 * What went wrong, without the place, for a report that names the place itself (a worker's
 * result, verify's problem list): a system call's `<syscall>: <strerror>`, else the codec's words.
 */
export function errorDetail(e: unknown): string {
  const sys = systemFields(e);
  return sys === undefined ? codecDiagnostic(e) : `${sys.syscall}: ${strerror(sys.code!)}`;
}

/** A Node system error (a failed system call: string `code` and `syscall`), or undefined. */
export function systemFields(e: unknown): NodeJS.ErrnoException | undefined {
  const err = e as NodeJS.ErrnoException | undefined;
  if (!(err instanceof Error) || err instanceof GitRepackError) return undefined; // ours: made already
  return typeof err.code === 'string' && typeof err.syscall === 'string' ? err : undefined;
}

/**
 * git's `die_errno(_("<what> '%s'"), path)`: `<what> '<path>': <strerror>` (no path: `<what>:
 * <strerror>`), made once from the fields of the system error `e`, which becomes the `cause`.
 * `e` that is no system error (one of ours, a bug) is returned as it is.
 */
export function systemError(
  code: ErrorCode,
  what: string,
  e: unknown,
  path?: string,
  file?: string,
): unknown {
  const sys = systemFields(e);
  if (sys === undefined) return e;
  const dest = (sys as { dest?: unknown }).dest;
  const at =
    path === undefined ? '' : ` '${path}'${typeof dest === 'string' ? ` -> '${dest}'` : ''}`;
  return new GitRepackError(code, `${what}${at}: ${strerror(sys.code!)}`, {
    file: file ?? path,
    ...systemWhere(sys, path),
  });
}

/** The fields (errno, syscall, path; the error as cause) of a Node system error, for a wrapper. */
export function systemWhere(sys: NodeJS.ErrnoException, path = sys.path): ErrorWhere {
  const why = strerror(sys.code!);
  return { detail: why, cause: sys, errno: sys.code, syscall: sys.syscall, path };
}

/** `<syscall> '<path>': <strerror>`: a system error no caller named, in git's words. */
export function systemCallText(sys: NodeJS.ErrnoException): string {
  return `${sys.syscall}${sys.path === undefined ? '' : ` '${sys.path}'`}: ${strerror(sys.code!)}`;
}

/**
 * A system error that reached the top unwrapped, in git's shape: `<syscall> '<path>': <strerror>`
 * (Node's own text, `ENOENT: no such file or directory, open '<path>'`, is not git's).
 */
export function unwrappedSystemError(e: unknown): unknown {
  const sys = systemFields(e);
  return sys === undefined ? e : systemError('io', sys.syscall!, e, sys.path);
}
