/**
 * Arguments and paths that are not UTF-8 (git takes any bytes but NUL in a file name), carried
 * through string code as Python's "surrogateescape" does: a byte that is not part of a valid
 * UTF-8 sequence becomes the lone surrogate U+DC80..U+DCFF, which no valid UTF-8 text decodes to,
 * and becomes that byte again where the string meets the file system or the terminal.
 */

/** The length of the valid UTF-8 sequence at `i`, or 0 (overlong forms, surrogates and code points past U+10FFFF are invalid). */
function sequenceAt(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const len =
    c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (len === 0 || i + len > b.length) return 0;
  for (let k = 1; k < len; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0;
  const c1 = b[i + 1]!;
  if (c === 0xe0 && c1 < 0xa0) return 0; // overlong
  if (c === 0xed && c1 >= 0xa0) return 0; // a surrogate
  if (c === 0xf0 && c1 < 0x90) return 0; // overlong
  if (c === 0xf4 && c1 >= 0x90) return 0; // past U+10FFFF
  return len;
}

/** `bytes` as a string: UTF-8 where valid, each other byte as U+DC00 + byte. */
export function decodeEscaped(bytes: Uint8Array): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < bytes.length;) {
    const n = sequenceAt(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out +=
      Buffer.from(bytes.subarray(from, i)).toString('utf8') +
      String.fromCharCode(0xdc00 + bytes[i]!);
    from = ++i;
  }
  return out + Buffer.from(bytes.subarray(from)).toString('utf8');
}

/** Does `s` carry escaped bytes (lone surrogates U+DC80..U+DCFF)? */
export function hasEscapedBytes(s: string): boolean {
  return /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/.test(s);
}

/** The bytes `s` stands for: UTF-8, with each escaped byte as itself. */
export function encodeEscaped(s: string): Buffer {
  if (!hasEscapedBytes(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const lone =
      c >= 0xdc80 &&
      c <= 0xdcff &&
      !(i > 0 && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff);
    if (!lone) continue;
    parts.push(Buffer.from(s.slice(from, i), 'utf8'), Buffer.of(c - 0xdc00));
    from = i + 1;
  }
  parts.push(Buffer.from(s.slice(from), 'utf8'));
  return Buffer.concat(parts);
}

/** A path for Node's file system calls: the string itself, or its bytes when it carries escaped ones. */
export function fsPath(s: string): string | Buffer {
  return hasEscapedBytes(s) ? encodeEscaped(s) : s;
}
