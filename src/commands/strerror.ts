/** strerror(3) wording for the errno codes opening a file commonly meets (git prints strerror). */
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
