/** glibc's strerror() texts, which git prints (`die_errno`), for the codes Node names instead. */
const STRERROR: Record<string, string> = {
  EPERM: 'Operation not permitted',
  ENOENT: 'No such file or directory',
  EIO: 'Input/output error',
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
  EMFILE: 'Too many open files',
  ENFILE: 'Too many open files in system',
  EFBIG: 'File too large',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EPIPE: 'Broken pipe',
  ENAMETOOLONG: 'File name too long',
  ENOTEMPTY: 'Directory not empty',
  ELOOP: 'Too many levels of symbolic links',
  EDQUOT: 'Disk quota exceeded',
  ESTALE: 'Stale file handle',
};

export function strerror(code: string): string | undefined {
  return STRERROR[code];
}

/**
 * Node's `ENOSPC: no space left on device, write '/x'` becomes git's `write '/x': No space left on
 * device` wherever it appears in a message (our errors often wrap Node's text).
 */
export function withStrerror(message: string): string {
  return message.replace(
    /\b(E[A-Z]+): [a-z][^,]*, ([a-z_]+)(?: '([^']*)')?(?: -> '([^']*)')?/g,
    (all, code: string, syscall: string, path?: string, dest?: string) => {
      const text = strerror(code);
      if (text === undefined) return all;
      const where =
        path === undefined
          ? syscall
          : `${syscall} '${path}'${dest === undefined ? '' : ` -> '${dest}'`}`;
      return `${where}: ${text}`;
    },
  );
}
