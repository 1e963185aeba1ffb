/**
 * Commit and tree parsing, byte by byte with no string per line or entry (the walk and the
 * reader benchmarks share it, so the benchmark times the parser the tool uses). Mirrors what
 * git's `parse_commit_buffer` and `tree_entry_extract` read, and no more.
 */

/** 0–15 for a hex digit's byte, -1 for anything else. */
function nibble(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Parses `len` bytes of hex at `p` of `d` into `out`; false (and `out` zeroed) when not hex. */
export function hexInto(d: Uint8Array, p: number, out: Buffer, len: number): boolean {
  if (p + 2 * len > d.length) {
    out.fill(0);
    return false;
  }
  for (let k = 0; k < len; k++) {
    const hi = nibble(d[p + 2 * k]!);
    const lo = nibble(d[p + 2 * k + 1]!);
    if (hi < 0 || lo < 0) {
      out.fill(0);
      return false;
    }
    out[k] = (hi << 4) | lo;
  }
  return true;
}

function startsWith(d: Uint8Array, p: number, word: Uint8Array): boolean {
  if (p + word.length > d.length) return false;
  for (let k = 0; k < word.length; k++) if (d[p + k] !== word[k]) return false;
  return true;
}

const TREE_ = Buffer.from('tree ');
const PARENT_ = Buffer.from('parent ');
const COMMITTER_ = Buffer.from('committer ');
const GITLINK = Buffer.from('160000');

/**
 * A commit's links, in order: `tree <hex>` then each `parent <hex>`; `visit` gets whether it is
 * the tree and where the hex starts. Stops at the first other header line, as git's parser does.
 */
export function forEachCommitLink(
  d: Uint8Array,
  visit: (isTree: boolean, hexAt: number) => void,
): void {
  let p = 0;
  while (p < d.length && d[p] !== 0x0a) {
    let end = p;
    while (end < d.length && d[end] !== 0x0a) end++;
    if (startsWith(d, p, TREE_)) visit(true, p + 5);
    else if (startsWith(d, p, PARENT_)) visit(false, p + 7);
    else break;
    p = end + 1;
  }
}

/** The committer's timestamp (seconds since the epoch), 0 when the header has none. */
export function committerTime(d: Uint8Array): number {
  for (let p = 0; p < d.length && d[p] !== 0x0a;) {
    let end = p;
    while (end < d.length && d[end] !== 0x0a) end++;
    if (startsWith(d, p, COMMITTER_)) {
      // "... <email> <seconds> <+zone>": the seconds are the last field but one.
      let q = end - 1;
      while (q > p && d[q] !== 0x20) q--;
      let t = 0;
      for (let k = q - 1, scale = 1; k > p && d[k] !== 0x20; k--, scale *= 10) {
        const c = d[k]! - 0x30;
        if (c < 0 || c > 9) return 0;
        t += c * scale;
      }
      return t;
    }
    p = end + 1;
  }
  return 0;
}

export const TREE_ENTRY_BLOB = 0;
export const TREE_ENTRY_TREE = 1;
export const TREE_ENTRY_GITLINK = 2;

/**
 * A tree's entries, `<mode> <name>\0<id>`: `visit` gets the name's [start, end), where the id
 * starts and the kind (TREE_ENTRY_*). Returns -1, or the offset of a malformed entry (the walk
 * stops there).
 */
export function forEachTreeEntry(
  d: Uint8Array,
  len: number,
  visit: (nameStart: number, nameEnd: number, idAt: number, kind: number) => void,
): number {
  const n = d.length;
  let p = 0;
  while (p < n) {
    let sp = p;
    while (sp < n && d[sp] !== 0x20) sp++;
    let nul = sp;
    while (nul < n && d[nul] !== 0) nul++;
    if (sp >= n || nul >= n || nul + 1 + len > n) return p;
    const modeLen = sp - p;
    const kind =
      modeLen === 5 && d[p] === 0x34
        ? TREE_ENTRY_TREE
        : modeLen === 6 && startsWith(d, p, GITLINK)
          ? TREE_ENTRY_GITLINK
          : TREE_ENTRY_BLOB; // "40000", "160000"
    visit(sp + 1, nul, nul + 1, kind);
    p = nul + 1 + len;
  }
  return -1;
}
