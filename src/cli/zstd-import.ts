import { resolve } from 'node:path';
import { importZpack } from '../commands/zstd.js';
import { fallbackLevel, resolveLevels } from '../repack/levels.js';
import { parseArgs, positionals } from './args.js';
import { UsageError } from './io.js';
import { fsckModeFrom, levelFlagsFrom, withLevelOptions } from './level-options.js';
import type { CliContext } from './main.js';
import { phaseReporter, wantProgress, warn } from './progress.js';
import { openRepository } from './repo.js';

export const ZSTD_IMPORT_USAGE = `usage: git repack-ts zstd-import [<level options>] [--fsck=<mode> | --no-fsck] [--json] [-q] <file>

Turns a zstd pack written by 'git repack-ts --zstd -o <file>' back into a normal pack of this
repository (every object and delta kept), at the levels 'git repack-ts' would use.

    --graph-compression <n>, --commit-compression <n>, --tree-compression <n>,
    --blob-compression <n>, --tag-compression <n>, --compression <n>
                          zlib levels, as for the rewrite (config keys apply too)
    --fsck <mode>         full (default) or connectivity
    --no-fsck             skip git fsck (the proof that every object arrived still runs)
    --json                print a machine-readable summary
    -q, --quiet           no progress
`;

export async function runZstdImport(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, ZSTD_IMPORT_USAGE, (y) =>
    withLevelOptions(y)
      .option('json', { type: 'boolean', default: false })
      .option('quiet', { alias: 'q', type: 'boolean' })
      .option('progress', { type: 'boolean' }),
  );
  const files = positionals(o);
  if (files.length !== 1) throw new UsageError(files.length === 0 ? 'no file given' : 'one file at a time', ZSTD_IMPORT_USAGE);
  const flags = levelFlagsFrom(o, ZSTD_IMPORT_USAGE);
  const fsck = fsckModeFrom(o, ZSTD_IMPORT_USAGE);
  const { io } = ctx;
  const repo = openRepository(ctx);
  const r = await importZpack(repo, resolve(ctx.cwd, files[0]!), {
    levels: resolveLevels(flags, repo.config),
    autoFallback: fallbackLevel(flags, repo.config),
    fsck,
    onProgress: phaseReporter(io, !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress })),
    onWarning: (m) => warn(io, m),
  });
  if (o.json) io.out(JSON.stringify(r, null, 2) + '\n');
  else if (!o.quiet) io.out(`${r.alreadyPresent ? 'already present' : 'installed'}: ${r.newPack}.pack, ${r.objects} objects${r.promisor ? ' (promisor)' : ''}\n`);
  return 0;
}
