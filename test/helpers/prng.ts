/**
 * Deterministic content generators for fixtures and tests.
 *
 * Everything here is a pure function of its seed: never use Math.random in
 * fixtures, the object ids of the fixture repositories must be identical on
 * every machine and every run.
 */

/** mulberry32: tiny, fast, good enough 32-bit PRNG. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Next unsigned 32-bit integer. */
  u32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    if (n <= 0) throw new Error(`Prng.int: n must be > 0 (got ${n})`);
    return this.u32() % n;
  }

  /** Integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('Prng.pick: empty array');
    return item;
  }

  /** n pseudo-random bytes (incompressible). */
  bytes(n: number): Buffer {
    const buf = Buffer.allocUnsafe(n);
    let i = 0;
    for (; i + 4 <= n; i += 4) buf.writeUInt32LE(this.u32(), i);
    if (i < n) {
      const last = this.u32();
      for (let k = 0; i < n; i++, k++) buf[i] = (last >>> (8 * k)) & 0xff;
    }
    return buf;
  }

  /** A line of `count` words (no newline). */
  words(count: number): string {
    const out: string[] = [];
    for (let i = 0; i < count; i++) out.push(this.pick(WORDS));
    return out.join(' ');
  }

  /** A plausible text line of 4..12 words (no newline). */
  line(): string {
    return this.words(this.range(4, 12));
  }

  /** `count` text lines, each terminated by '\n'. */
  lines(count: number): string[] {
    const out: string[] = [];
    for (let i = 0; i < count; i++) out.push(this.line());
    return out;
  }
}

export const WORDS: readonly string[] = [
  'alpha',
  'bravo',
  'charlie',
  'delta',
  'echo',
  'foxtrot',
  'golf',
  'hotel',
  'india',
  'juliet',
  'kilo',
  'lima',
  'mike',
  'november',
  'oscar',
  'papa',
  'quebec',
  'romeo',
  'sierra',
  'tango',
  'uniform',
  'victor',
  'whiskey',
  'xray',
  'yankee',
  'zulu',
  'pack',
  'object',
  'delta',
  'chain',
  'offset',
  'index',
  'commit',
  'tree',
  'blob',
  'tag',
  'ref',
  'head',
  'branch',
  'merge',
  'zlib',
  'inflate',
  'deflate',
  'window',
  'depth',
  'base',
  'copy',
  'insert',
  'the',
  'a',
  'of',
  'and',
  'to',
  'in',
  'is',
  'that',
  'lorem',
  'ipsum',
  'dolor',
  'sit',
  'amet',
  'consectetur',
  'adipiscing',
  'elit',
];

/**
 * A highly compressible buffer of exactly `size` bytes: numbered, repetitive
 * text lines (compresses to well under 5% with zlib).
 */
export function compressibleBytes(size: number, label = 'line'): Buffer {
  const parts: string[] = [];
  let total = 0;
  for (let i = 0; total < size; i++) {
    const l = `${label} ${String(i).padStart(8, '0')}: the quick brown fox jumps over the lazy dog\n`;
    parts.push(l);
    total += l.length;
  }
  return Buffer.from(parts.join(''), 'latin1').subarray(0, size);
}
