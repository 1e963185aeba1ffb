/** git's `unquote_c_style` (quote.c): the closing quote ends the name; what follows is ignored. */
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
    const simple = ESCAPES[c];
    if (simple !== undefined) {
      out.push(simple);
      continue;
    }
    if (c < 0x30 || c > 0x33) return undefined;
    // \ooo: three octal digits, the first 0-3.
    const d1 = line[i++];
    if (d1 === undefined || d1 < 0x30 || d1 > 0x37) return undefined;
    const d2 = line[i++];
    if (d2 === undefined || d2 < 0x30 || d2 > 0x37) return undefined;
    out.push(((c - 0x30) << 6) | ((d1 - 0x30) << 3) | (d2 - 0x30));
  }
}

/** The one-letter escapes `unquote_c_style` knows, and `\\`, `\"`. */
const ESCAPES: Record<number, number> = {
  0x61: 7, // \a
  0x62: 8, // \b
  0x66: 12, // \f
  0x6e: 10, // \n
  0x72: 13, // \r
  0x74: 9, // \t
  0x76: 11, // \v
  0x5c: 0x5c,
  0x22: 0x22,
};

/**
 * One line of `--stdin-paths` as `hash_stdin_paths` reads it: strbuf_getline has dropped the LF;
 * one CR before it goes too, a quoted line is unquoted, and the name ends at a NUL (C string).
 * undefined: badly quoted.
 */
export function stdinPathOfLine(raw: Buffer): Buffer | undefined {
  let line = raw.length > 0 && raw[raw.length - 1] === 0x0d ? raw.subarray(0, raw.length - 1) : raw;
  if (line[0] === 0x22) {
    const u = unquoteCStyle(line);
    if (u === undefined) return undefined;
    line = u;
  }
  const nul = line.indexOf(0);
  return nul >= 0 ? line.subarray(0, nul) : line;
}
