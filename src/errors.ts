/**
 * Errors are values with a stable code and, where it applies, the file, offset and object they
 * concern. Codecs throw these; only cli/ turns one into `fatal: …` and an exit code (128, or 129
 * for usage). The library API (src/index.ts) throws nothing else: it is exported as GitRepackError.
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

  constructor(code: ErrorCode, message: string, where?: ErrorWhere) {
    super(message, where?.cause !== undefined ? { cause: where.cause } : undefined);
    this.name = 'GitRepackError';
    this.code = code;
    this.file = where?.file;
    this.offset = where?.offset;
    this.objectId = where?.objectId;
    this.detail = withoutPlace(where?.detail ?? message, where);
  }
}

/**
 * `text` without the place the error has as fields: a leading `<file>: ` and a trailing
 * ` at offset <n>` (issue 34: `detail` carried them where a site gave none of its own).
 */
function withoutPlace(text: string, where: ErrorWhere | undefined): string {
  let t = text;
  if (where?.file !== undefined && t.startsWith(`${where.file}: `))
    t = t.slice(where.file.length + 2);
  const at = / at offset \d+$/.exec(t);
  return at !== null && where?.offset !== undefined ? t.slice(0, at.index) : t;
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
): GitRepackError {
  return new GitRepackError(
    code,
    `${label === undefined ? '' : `${label} `}${file}: ${what} at offset ${offset}`,
    { file, offset, detail: what },
  );
}
