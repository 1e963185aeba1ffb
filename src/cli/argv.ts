import { constants, openSync, readFileSync, readlinkSync } from 'node:fs';
import { decodeEscaped, hasEscapedBytes } from '../commands/arg-bytes.js';

/**
 * Arguments and directories whose names are not UTF-8, which git takes as bytes: Node decodes
 * argv and getcwd() as UTF-8 and replaces what is not (U+FFFD), losing the name. The bytes are
 * read again from /proc and carried as escaped strings (commands/arg-bytes.ts).
 */

/** The arguments after the script, each byte of a name that is not UTF-8 kept (decodeEscaped). */
export function rawArguments(argv: string[] = process.argv): string[] {
  const given = argv.slice(2);
  if (!given.some((a) => a.includes('\uFFFD'))) return given;
  let cmdline: Buffer;
  try {
    cmdline = readFileSync('/proc/self/cmdline');
  } catch {
    return given; // not Linux: what Node decoded
  }
  const parts: Buffer[] = [];
  for (let at = 0; at < cmdline.length;) {
    const nul = cmdline.indexOf(0, at);
    const end = nul < 0 ? cmdline.length : nul;
    parts.push(cmdline.subarray(at, end));
    at = end + 1;
  }
  // node's own options come first: the arguments are the last ones, each as Node decoded it.
  const tail = parts.slice(parts.length - given.length);
  if (tail.length !== given.length || tail.some((b, i) => b.toString('utf8') !== given[i]))
    return given;
  return tail.map((b) => decodeEscaped(b));
}

/** A name that is not UTF-8. */
function notUtf8(bytes: Buffer): boolean {
  return hasEscapedBytes(decodeEscaped(bytes));
}

/**
 * An absolute directory named by `bytes` as a string every file call (ours and git's, in its
 * children) resolves: each component that is not UTF-8 is reached through a descriptor this
 * process keeps open, `/proc/<pid>/fd/<n>`. Throws the open's error.
 */
export function directoryString(bytes: Buffer): string {
  let cur = '';
  for (const comp of splitPath(bytes)) {
    if (!notUtf8(comp)) {
      cur += '/' + comp.toString('utf8');
      continue;
    }
    const fd = openSync(
      Buffer.concat([Buffer.from(cur + '/'), comp]),
      constants.O_RDONLY | constants.O_DIRECTORY,
    );
    cur = `/proc/${process.pid}/fd/${fd}`;
  }
  return cur === '' ? '/' : cur;
}

function splitPath(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at <= bytes.length;) {
    const slash = bytes.indexOf(0x2f, at);
    const end = slash < 0 ? bytes.length : slash;
    if (end > at) out.push(bytes.subarray(at, end));
    at = end + 1;
  }
  return out;
}

let cwdCache: string | undefined;

/** process.cwd(), or, for a directory whose name is not UTF-8, its directoryString. */
export function currentDirectoryString(): string {
  if (cwdCache !== undefined) return cwdCache;
  const c = process.cwd();
  if (!c.includes('\uFFFD')) return c;
  let raw: Buffer;
  try {
    raw = readlinkSync('/proc/self/cwd', { encoding: 'buffer' });
  } catch {
    return c;
  }
  cwdCache = notUtf8(raw) ? directoryString(raw) : c;
  return cwdCache;
}
