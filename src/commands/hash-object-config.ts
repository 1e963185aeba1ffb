import { readFileSync, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { GitError } from '../errors.js';
import { GitConfig, parseConfigBool, parseConfigInt } from '../store/config.js';

/**
 * The configuration hash-object reads, as git_default_config parses it for the keys that matter
 * here: compression levels, the big-file threshold, sharedRepository, core.fsync, and the
 * end-of-line settings that decide content conversion.
 */

/** zlib levels: -1 (zlib's default) or 0..9, else git dies. */
function compressionLevel(config: GitConfig, key: string, what: string): number | undefined {
  let level: number | undefined;
  for (const v of config.getAll(key)) {
    const n = parseConfigInt(v);
    if (n === undefined || !Number.isSafeInteger(n)) {
      throw new GitError('bad-config', `bad numeric config value '${v}' for '${key}': invalid unit`);
    }
    if (n !== -1 && (n < 0 || n > 9)) throw new GitError('bad-config', `bad ${what} compression level ${n}`);
    level = n;
  }
  return level;
}

export interface WriteSettings {
  looseCompression: number;
  packCompression: number;
  bigFileThreshold: number;
  sharedRepository: number;
  /** Is a loose object fsynced before it is linked into place (`core.fsync`, `core.fsyncObjectFiles`)? */
  fsyncLooseObjects: boolean;
}

/** `core.looseCompression`, `pack.compression` (both defaulting to `core.compression`), `core.bigFileThreshold`. */
export function writeSettings(config: GitConfig, parseShared: (v: string | null | undefined) => number): WriteSettings {
  const core = compressionLevel(config, 'core.compression', 'zlib');
  const loose = compressionLevel(config, 'core.loosecompression', 'zlib');
  const pack = compressionLevel(config, 'pack.compression', 'pack');
  let bigFileThreshold = 512 * 1024 * 1024;
  const t = config.get('core.bigfilethreshold');
  if (t !== undefined) {
    const n = parseConfigInt(t);
    if (n === undefined || n < 0 || !Number.isSafeInteger(n)) {
      throw new GitError('bad-config', `bad numeric config value '${t}' for 'core.bigfilethreshold': invalid unit`);
    }
    bigFileThreshold = n;
  }
  const sharedAll = config.has('core.sharedrepository') ? rawValue(config, 'core.sharedrepository') : undefined;
  return {
    looseCompression: loose ?? core ?? 1,
    packCompression: pack ?? core ?? -1,
    bigFileThreshold,
    sharedRepository: parseShared(sharedAll),
    fsyncLooseObjects: fsyncLooseObjects(config),
  };
}

/** The last value of a key, null for a bare `key` (git's "true" without `=`). */
function rawValue(config: GitConfig, key: string): string | null {
  // GitConfig.get maps a bare key to ''; getBool tells the two apart.
  const v = config.get(key) ?? '';
  if (v !== '') return v;
  try {
    return config.getBool(key) === true ? null : v;
  } catch {
    return v;
  }
}

// core.fsync components (cache.h of git 2.39): only the loose-object bit matters to hash-object.
const LOOSE_OBJECT = 1;
const PACK = 2;
const OBJECTS = LOOSE_OBJECT | PACK;
const DERIVED_METADATA = 4 | 8;
const ALL = 63;
const COMPONENTS: [string, number][] = [
  ['loose-object', LOOSE_OBJECT],
  ['pack', PACK],
  ['pack-metadata', 4],
  ['commit-graph', 8],
  ['index', 16],
  ['objects', OBJECTS],
  ['reference', 32],
  ['derived-metadata', DERIVED_METADATA],
  ['committed', OBJECTS | 32],
  ['added', OBJECTS | 32 | 16],
  ['all', ALL],
];
/** FSYNC_COMPONENTS_DEFAULT: objects and derived metadata, but not loose objects. */
const DEFAULT_COMPONENTS = (OBJECTS | DERIVED_METADATA) & ~LOOSE_OBJECT;

/** git's `parse_fsync_components` (names match by prefix of the given word, as strncmp does there). */
export function parseFsyncComponents(value: string): number {
  let current = DEFAULT_COMPONENTS;
  let positive = 0;
  let negative = 0;
  let s: string | undefined = value;
  while (s !== undefined) {
    s = s.replace(/^[, \t\n\r]+/, '');
    const comma: number = s.indexOf(',');
    const rest: string | undefined = comma < 0 ? undefined : s.slice(comma);
    let word = comma < 0 ? s : s.slice(0, comma);
    if (s === 'none') current = 0;
    else {
      const negated = word.startsWith('-');
      if (negated) word = word.slice(1);
      if (word === '') break;
      for (const [name, bits] of COMPONENTS) {
        if (!name.startsWith(word)) continue;
        if (negated) negative |= bits;
        else positive |= bits;
      }
    }
    s = rest;
  }
  return (current & ~negative) | positive;
}

/**
 * git 2.39's `close_loose_object`: fsync when `core.fsyncObjectFiles` is true or `core.fsync`
 * names loose objects; by default (FSYNC_COMPONENTS_DEFAULT) loose objects are not fsynced.
 */
export function fsyncLooseObjects(config: GitConfig): boolean {
  let objectFiles = false;
  try {
    objectFiles = config.getBool('core.fsyncobjectfiles') === true;
  } catch {
    objectFiles = false;
  }
  const v = config.get('core.fsync');
  const components = v === undefined ? DEFAULT_COMPONENTS : parseFsyncComponents(v);
  return objectFiles || (components & LOOSE_OBJECT) !== 0;
}

export type AutoCrlf = false | true | 'input';

export function autoCrlf(config: GitConfig): AutoCrlf {
  const v = config.get('core.autocrlf');
  if (v === undefined) return false;
  if (v.toLowerCase() === 'input') return 'input';
  const b = config.getBool('core.autocrlf');
  return b === true;
}

/**
 * convert.c's `text_eol_is_crlf`: would text be checked out with CRLF? (core.autocrlf true, or
 * core.eol=crlf without autocrlf=input; "native" is LF on this platform.)
 */
export function textEolIsCrlf(config: GitConfig, auto: AutoCrlf): boolean {
  if (auto === true) return true;
  if (auto === 'input') return false;
  return (config.get('core.eol') ?? '').toLowerCase() === 'crlf';
}

export function envBool(v: string | undefined): boolean {
  if (v === undefined) return false;
  return parseConfigBool(v) ?? true;
}

export function fileExists(p: string): boolean {
  return statSync(p, { throwIfNoEntry: false })?.isFile() ?? false;
}

/**
 * Places git reads a system-wide file (`gitconfig`, `gitattributes`) from, `$(sysconfdir)/<name>`:
 * /etc for a /usr install, else `<prefix>/etc`, the prefix taken from where `git` is on PATH.
 * git 2.39 has no way to print these paths; they are only consulted where git cannot be asked.
 */
export function systemFileCandidates(env: NodeJS.ProcessEnv, name: string): string[] {
  const out = new Set<string>([join('/etc', name), join('/usr/local/etc', name)]);
  for (const d of (env.PATH ?? '').split(delimiter)) {
    if (d === '') continue;
    const g = join(d, 'git');
    if (!fileExists(g)) continue;
    try {
      out.add(join(dirname(dirname(realpathSync(g))), 'etc', name));
    } catch {
      // unreadable link: the fixed candidates still apply
    }
    break;
  }
  if (env.GIT_EXEC_PATH) out.add(join(dirname(dirname(env.GIT_EXEC_PATH)), 'etc', name));
  return [...out];
}

// ---------------------------------------------------------------------------------------------
// The configuration without a `git config` process, when it is plain enough to read exactly.

/** A section header git reads the same way whatever else it allows: `[name]` or `[name "sub"]`. */
const SECTION = /^\[([A-Za-z0-9-]+)(?:[ \t\r\v\f]+"([^"\\\n]*)")?\][ \t\r\v\f]*$/;
/** `name = value` or a bare `name`, the value without quotes, escapes or comments. */
const ENTRY = /^([A-Za-z][A-Za-z0-9-]*)[ \t\r\v\f]*(?:=([^"\\#;]*))?$/;

/**
 * One config file as `git config --list` shows it (config.c's parse_value for the plain case:
 * leading and trailing blanks dropped, each blank between words read as a space), or undefined
 * when the file holds anything else (quotes, escapes, comments after a value, continuation
 * lines, includes, a header and an entry on one line…): then git reads it.
 */
export function parsePlainConfig(text: string, out: Map<string, (string | null)[]>): boolean {
  let section: string | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^[ \t\r\v\f]+/, '').replace(/\r$/, '');
    if (line === '' || line[0] === '#' || line[0] === ';') continue;
    if (line[0] === '[') {
      const m = SECTION.exec(line);
      if (!m) return false;
      const name = m[1]!.toLowerCase();
      if (name === 'include' || name === 'includeif') return false;
      section = m[2] === undefined ? name : `${name}.${m[2]}`;
      continue;
    }
    const m = ENTRY.exec(line);
    if (!m || section === undefined) return false;
    const key = `${section}.${m[1]!.toLowerCase()}`;
    const value = m[2] === undefined ? null : m[2].replace(/^[ \t\r\v\f]+|[ \t\r\v\f]+$/g, '').replace(/[ \t\r\v\f]/g, ' ');
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  }
  return true;
}

/** A file's text, '' when it does not exist, undefined when it cannot be read as plain text. */
function readConfigFile(path: string): string | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? '' : undefined;
  }
  // A byte order mark or a NUL: git's own reading.
  if (buf.includes(0) || (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf)) return undefined;
  return buf.toString('utf8');
}

/**
 * `git config --list` for `gitDir` (or outside a repository) without running git, when every
 * file git would read is plain (parsePlainConfig) and nothing else adds to them: no `git -c`
 * (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT), no GIT_CONFIG, no system file unless
 * GIT_CONFIG_NOSYSTEM (its place is not certain), no per-worktree configuration. Files in git's
 * order (do_git_config_sequence): global (XDG, then ~/.gitconfig, or GIT_CONFIG_GLOBAL), then
 * the repository's. Undefined when git must be asked; saves a process per run (~10 ms here).
 */
export function readPlainConfig(commonDir: string | undefined, env: NodeJS.ProcessEnv): GitConfig | undefined {
  if (env.GIT_CONFIG_PARAMETERS || env.GIT_CONFIG_COUNT || env.GIT_CONFIG !== undefined || env.GIT_CONFIG_GLOBAL === '') return undefined;
  if (!envBool(env.GIT_CONFIG_NOSYSTEM)) {
    if (env.GIT_CONFIG_SYSTEM !== undefined || systemFileCandidates(env, 'gitconfig').some(fileExists)) return undefined;
  }
  const files: string[] = [];
  if (env.GIT_CONFIG_GLOBAL !== undefined) files.push(env.GIT_CONFIG_GLOBAL);
  else {
    const home = env.HOME;
    if (env.XDG_CONFIG_HOME) files.push(join(env.XDG_CONFIG_HOME, 'git', 'config'));
    else if (home) files.push(join(home, '.config', 'git', 'config'));
    if (home) files.push(join(home, '.gitconfig'));
  }
  if (commonDir !== undefined) files.push(join(commonDir, 'config'));
  const entries = new Map<string, (string | null)[]>();
  for (const f of files) {
    const text = readConfigFile(f);
    if (text === undefined || !parsePlainConfig(text, entries)) return undefined;
  }
  if (entries.has('extensions.worktreeconfig')) return undefined;
  return new GitConfig(entries);
}
