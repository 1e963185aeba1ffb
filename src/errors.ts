/**
 * Errors are values with a stable code and, where it applies, the file and offset they concern.
 * Codecs throw these; only cli/ turns one into `fatal: …` and an exit code (128, or 129 for usage).
 */
export type ErrorCode =
  | 'usage'
  | 'not-a-repository'
  | 'dubious-ownership'
  | 'bad-config'
  | 'bad-pack'
  | 'bad-idx'
  | 'bad-rev'
  | 'bad-object'
  | 'bad-delta'
  | 'missing-object'
  | 'io'
  | 'locked'
  | 'verify-failed'
  | 'unsupported';

export class GitError extends Error {
  readonly code: ErrorCode;
  readonly file: string | undefined;
  readonly offset: number | undefined;

  constructor(code: ErrorCode, message: string, where?: { file?: string; offset?: number; cause?: unknown }) {
    super(message, where?.cause !== undefined ? { cause: where.cause } : undefined);
    this.name = 'GitError';
    this.code = code;
    this.file = where?.file;
    this.offset = where?.offset;
  }
}

/** A format error in a pack, index or object: always names the file and offset. */
export function corrupt(code: ErrorCode, file: string, offset: number, what: string): GitError {
  return new GitError(code, `${file}: ${what} at offset ${offset}`, { file, offset });
}

export function usageError(message: string): GitError {
  return new GitError('usage', message);
}
