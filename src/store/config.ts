import { GitError } from '../errors.js';

/**
 * Git configuration as git resolves it (system, global, repository, worktree, `include`/`includeIf`,
 * `GIT_CONFIG_*` and `git -c`): read by config-files.ts, from the files themselves when they are
 * plain, else from `git config --list`. Keys are `section.name` or `section.subsection.name` with
 * section and name lower-cased, as git prints them; a key given without `= value` holds null.
 *
 * Values are parsed the way git's config callbacks parse them: every value of a key, in order, so
 * a bad value dies even when a later one would override it (git_default_core_config,
 * git_pack_config); the last value is the answer.
 */
export class GitConfig {
  constructor(private readonly entries: Map<string, (string | null)[]>) {}

  static empty(): GitConfig {
    return new GitConfig(new Map());
  }

  /** The last value; a key given without `= value` reads as the empty string (boolean true). */
  get(key: string): string | undefined {
    const v = this.entries.get(normalizeKey(key));
    return v === undefined ? undefined : (v[v.length - 1] ?? '');
  }

  getAll(key: string): string[] {
    return (this.entries.get(normalizeKey(key)) ?? []).map((v) => v ?? '');
  }

  /** Every value as git's callbacks see it: null for a key without `= value`. */
  getRaw(key: string): (string | null)[] {
    return this.entries.get(normalizeKey(key)) ?? [];
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  has(key: string): boolean {
    return this.entries.has(normalizeKey(key));
  }

  /**
   * The number git reads for `key`: `git_config_ulong` for the keys git reads so
   * (core.bigFileThreshold), `git_config_int` otherwise; a bad value is git's fatal error.
   */
  getInt(key: string): number | undefined {
    const name = normalizeKey(key);
    const parse = ULONG_KEYS.has(name) ? parseConfigUlong : parseConfigInt;
    let last: number | undefined;
    for (const v of this.getRaw(name)) {
      const n = parse(v ?? '');
      if (typeof n !== 'number') throw badNumber(name, v ?? '', n);
      last = n;
    }
    return last;
  }

  /** git's `git_config_bool` over every value: a bare key is true; a bad value is fatal. */
  getBool(key: string): boolean | undefined {
    const name = normalizeKey(key);
    let last: boolean | undefined;
    for (const v of this.getRaw(name)) last = configBool(name, v);
    return last;
  }
}

/** Keys git 2.39 parses with git_config_ulong (config.c, git_default_core_config). */
const ULONG_KEYS = new Set([
  'core.bigfilethreshold',
  'core.packedgitwindowsize',
  'core.packedgitlimit',
  'core.deltabasecachelimit',
]);

/** Section and variable lower-cased, the subsection kept (git_config_parse_key). */
export function normalizeKey(key: string): string {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first < 0) return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}

/** Each NUL-terminated record of `git config -z` output, numbered from 0. */
export function forEachRecord(out: Buffer, each: (i: number, rec: string) => void): void {
  let start = 0;
  for (let i = 0; start < out.length; i++) {
    let end = out.indexOf(0, start);
    if (end < 0) end = out.length;
    each(i, out.toString('utf8', start, end));
    start = end + 1;
  }
}

/** One `key\nvalue` (or bare `key`) record into `map`. */
export function addRecord(map: Map<string, (string | null)[]>, rec: string): void {
  const nl = rec.indexOf('\n');
  const key = nl < 0 ? rec : rec.slice(0, nl);
  const value = nl < 0 ? null : rec.slice(nl + 1);
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** `git config -z --list` output: `key\nvalue\0`, or `key\0` for a key without a value. */
export function parseConfigList(out: Buffer): Map<string, (string | null)[]> {
  const map = new Map<string, (string | null)[]>();
  forEachRecord(out, (_, rec) => addRecord(map, rec));
  return map;
}

// ---------------------------------------------------------------------------------------------
// Numbers and booleans, as config.c of git 2.39 parses them.

/** Why git_parse_signed/git_parse_unsigned refused a value: errno EINVAL or ERANGE, in git's words. */
export type NumberProblem = 'invalid unit' | 'out of range';

const INT_MAX = 2n ** 31n - 1n;
const INT64_MAX = 2n ** 63n - 1n;
const ULONG_MAX = 2n ** 64n - 1n;

/** C's isspace in the C locale, which strtoimax skips (git's own isspace is narrower). */
const C_SPACE = /^[ \t\n\v\f\r]*/;

/**
 * glibc's strtoimax/strtoumax with base 0: blanks, a sign, then `0x` hex, `0` octal or decimal.
 * `end` is where parsing stopped (0 when no digit was read); `magnitude` is unsigned.
 */
function strtoBase0(s: string): { negative: boolean; magnitude: bigint; end: number } {
  let i = C_SPACE.exec(s)![0].length;
  let negative = false;
  if (s[i] === '+' || s[i] === '-') negative = s[i++] === '-';
  let digits: RegExp;
  let base: bigint;
  if (
    s[i] === '0' &&
    (s[i + 1] === 'x' || s[i + 1] === 'X') &&
    /[0-9a-fA-F]/.test(s[i + 2] ?? '')
  ) {
    i += 2;
    digits = /^[0-9a-fA-F]+/;
    base = 16n;
  } else if (s[i] === '0') {
    digits = /^[0-7]+/;
    base = 8n;
  } else {
    digits = /^[0-9]+/;
    base = 10n;
  }
  const m = digits.exec(s.slice(i));
  if (!m) return { negative: false, magnitude: 0n, end: 0 };
  let magnitude = 0n;
  for (const c of m[0]) magnitude = magnitude * base + BigInt(parseInt(c, 16));
  return { negative, magnitude, end: i + m[0].length };
}

/** git's `get_unit_factor`: nothing, or exactly one of k, m, g in either case. */
function unitFactor(rest: string): bigint | undefined {
  const units: Record<string, bigint> = { '': 1n, k: 1024n, m: 1024n ** 2n, g: 1024n ** 3n };
  return rest.length <= 1 ? units[rest.toLowerCase()] : undefined;
}

/** git's `git_parse_signed` (config.c): the value, or why git refuses it. */
export function parseSigned(value: string, max: bigint): bigint | NumberProblem {
  if (value === '') return 'invalid unit';
  const { negative, magnitude, end } = strtoBase0(value);
  // strtoimax's own ERANGE: beyond intmax_t.
  if (magnitude > (negative ? INT64_MAX + 1n : INT64_MAX)) return 'out of range';
  if (end === 0) return 'invalid unit';
  const factor = unitFactor(value.slice(end));
  if (factor === undefined) return 'invalid unit';
  const val = negative ? -magnitude : magnitude;
  // C's division truncates toward zero, as BigInt's does.
  if ((val < 0n && -max / factor > val) || (val > 0n && max / factor < val)) return 'out of range';
  return val * factor;
}

/** git's `git_parse_unsigned` (config.c): any '-' is refused before strtoumax sees it. */
export function parseUnsigned(value: string, max: bigint): bigint | NumberProblem {
  if (value === '' || value.includes('-')) return 'invalid unit';
  const { magnitude, end } = strtoBase0(value);
  if (magnitude > ULONG_MAX) return 'out of range';
  if (end === 0) return 'invalid unit';
  const factor = unitFactor(value.slice(end));
  if (factor === undefined) return 'invalid unit';
  if (magnitude * factor > max) return 'out of range';
  return magnitude * factor;
}

/** `git_parse_int`: an int (31 bits and a sign), units k/m/g, base 0. */
export function parseConfigInt(value: string): number | NumberProblem {
  const n = parseSigned(value, INT_MAX);
  return typeof n === 'bigint' ? Number(n) : n;
}

/** `git_parse_ulong` (64-bit unsigned long); values past 2^53 lose their low bits. */
export function parseConfigUlong(value: string): number | NumberProblem {
  const n = parseUnsigned(value, ULONG_MAX);
  return typeof n === 'bigint' ? Number(n) : n;
}

/** git's `die_bad_number` (without the origin of the value, which git adds). */
export function badNumber(key: string, value: string, why: NumberProblem): GitError {
  return new GitError(
    'bad-config',
    `bad numeric config value '${value}' for '${normalizeKey(key)}': ${why}`,
  );
}

/**
 * A zlib level as git_default_core_config (`zlib`) and git_pack_config (`pack`) read one: each
 * value in turn an int, then -1 or 0..9, else git dies with its message; the last one counts.
 */
export function compressionLevel(
  config: GitConfig,
  key: string,
  what: 'zlib' | 'pack',
): number | undefined {
  const name = normalizeKey(key);
  let level: number | undefined;
  for (const v of config.getRaw(name)) {
    const n = parseConfigInt(v ?? '');
    if (typeof n !== 'number') throw badNumber(name, v ?? '', n);
    if (n < -1 || n > 9) throw new GitError('bad-config', `bad ${what} compression level ${n}`);
    level = n;
  }
  return level;
}

/** `git_parse_maybe_bool`: true/yes/on, false/no/off (any case), '' false, an int; else undefined. */
export function parseConfigBool(v: string | null): boolean | undefined {
  if (v === null) return true;
  const s = v.toLowerCase();
  if (s === 'true' || s === 'yes' || s === 'on') return true;
  if (s === 'false' || s === 'no' || s === 'off' || s === '') return false;
  const n = parseConfigInt(v);
  return typeof n === 'number' ? n !== 0 : undefined;
}

/** `git_config_bool`: a value that is no boolean is fatal, in git's words. */
export function configBool(key: string, v: string | null): boolean {
  const b = parseConfigBool(v);
  if (b === undefined)
    throw new GitError('bad-config', `bad boolean config value '${v}' for '${key}'`);
  return b;
}

/** `git_env_bool`: the variable read as a config boolean, `def` when unset; a bad value is fatal. */
export function envBool(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const v = env[name];
  return v === undefined ? def : configBool(name, v);
}
