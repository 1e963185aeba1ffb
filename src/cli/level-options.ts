import type { Options } from './args.js';
import { nameOf, type LevelInputs } from '../commands/options.js';
import { GitError } from '../errors.js';
import { LEVEL_KEYS } from '../repack/levels.js';
import { UsageError } from './io.js';

/** The per-type level options shared by the rewrite and zstd-import. */
export function withLevelOptions<T>(y: Options<T>) {
  return y
    .option('graph-compression', { type: 'string' })
    .option('commit-compression', { type: 'string' })
    .option('tree-compression', { type: 'string' })
    .option('blob-compression', { type: 'string' })
    .option('tag-compression', { type: 'string' })
    .option('compression', { type: 'string' })
    .option('fsck', { type: 'string', negatable: true });
}

/** The level flags under the library's names, as given: commands/options.ts checks them. */
export function levelInputsOf(o: Record<string, unknown>): LevelInputs {
  return Object.fromEntries(LEVEL_KEYS.map((k) => [k, o[nameOf(k, 'flag').slice(2)]]));
}

/** `parse()`, its usage errors printed with the command's usage as parse-options does. */
export function checked<T>(usage: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof GitError && e.code === 'usage') throw new UsageError(e.message, usage);
    throw e;
  }
}
