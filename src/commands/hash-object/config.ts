import { compressionLevel, parseConfigBool, type GitConfig } from '../../store/config.js';

export { fileExists, systemFileCandidates } from '../../store/config-files.js';

/**
 * The configuration hash-object reads, as git_default_config parses it for the keys that matter
 * here: compression levels, the big-file threshold, sharedRepository, core.fsync, and the
 * end-of-line settings that decide content conversion.
 */

export interface WriteSettings {
  looseCompression: number;
  packCompression: number;
  bigFileThreshold: number;
  sharedRepository: number;
  /** Is a loose object fsynced before it is linked into place (`core.fsync`, `core.fsyncObjectFiles`)? */
  fsyncLooseObjects: boolean;
}

/** `core.looseCompression`, `pack.compression` (both defaulting to `core.compression`), `core.bigFileThreshold`. */
export function writeSettings(
  config: GitConfig,
  parseShared: (v: string | null | undefined) => number,
): WriteSettings {
  const core = compressionLevel(config, 'core.compression', 'zlib');
  const loose = compressionLevel(config, 'core.loosecompression', 'zlib');
  const pack = compressionLevel(config, 'pack.compression', 'pack');
  // git_config_ulong, as git_default_core_config reads it.
  const bigFileThreshold = config.getInt('core.bigfilethreshold') ?? 512 * 1024 * 1024;
  const sharedAll = config.has('core.sharedrepository')
    ? rawValue(config, 'core.sharedrepository')
    : undefined;
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
  const all = config.getRaw(key);
  return all[all.length - 1] ?? null;
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
