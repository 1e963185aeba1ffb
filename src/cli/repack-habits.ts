import type { Options } from './args.js';
import { UsageError } from './io.js';

/**
 * `git repack`'s options as a git user types them (`git repack-ts -a -d`, `-adq`, `-l`). Those
 * that ask for what the rewrite always does are accepted and change nothing; those that ask for
 * git's delta search, which the rewrite does not do, get one line saying what it
 * does instead (exit 129, no usage: parse-options' shape for a value it refuses). `-b` is taken
 * as git takes it (repack.ts passes it on).
 */
export function withRepackHabits<T>(y: Options<T>) {
  return (
    y
      // -A is -a (`--all`, repack.ts: every pack into one), and -k too: every object of a
      // partition goes into its new pack, unreachable ones included (none is dropped or loosened).
      .option('A', { alias: 'A', type: 'boolean', shortOnly: true })
      .option('keep-unreachable', { alias: 'k', type: 'boolean' })
      // -d: the old packs and loose objects are removed once the new pack is proved and installed.
      .option('d', { alias: 'd', type: 'boolean', shortOnly: true })
      // -l: only the repository's own packs and loose objects are read; alternates are never copied nor written.
      .option('local', { alias: 'l', type: 'boolean' })
      .option('f', { alias: 'f', type: 'boolean', shortOnly: true })
      .option('F', { alias: 'F', type: 'boolean', shortOnly: true })
      .option('window', { type: 'string' })
      .option('window-memory', { type: 'string' })
      .option('depth', { type: 'string' })
      // -b: a bitmap for the new pack (carried over, else git's multi-pack-index bitmap);
      // --no-write-bitmap-index: none, not even one carried over.
      .option('write-bitmap-index', { alias: 'b', type: 'boolean' })
  );
}

/** The first of git repack's options that asks for what the rewrite does not do: one line, exit 129. */
export function refuseRepackHabits(o: Record<string, unknown>, usage: string): void {
  const refuse = (msg: string): never => {
    throw new UsageError(msg, usage, 'none');
  };
  const search = (flags: string): string =>
    `for a new delta search run 'git repack -a -d ${flags}', then git repack-ts`;
  if (o.f === true)
    refuse(
      `-f: git repack-ts searches for no deltas, it keeps every one as it is; ${search('-f')}`,
    );
  if (o.F === true)
    refuse(
      `-F: git repack-ts keeps every delta and re-deflates what its levels change (--compression=<n>: every entry); ${search('-F')}`,
    );
  for (const name of ['window', 'window-memory', 'depth']) {
    if (o[name] !== undefined)
      refuse(
        `--${name}: git repack-ts searches for no deltas, it keeps every one as it is; ${search(`-f --${name}=<n>`)}`,
      );
  }
}
