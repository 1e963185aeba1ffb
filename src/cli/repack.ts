import { resolve } from 'node:path';
import { DEFAULT_DICT_SIZE } from '../codec/dict.js';
import { parseRepackOptions, resolveRepackOptions } from '../commands/options.js';
import { repack, type RepackResult } from '../commands/repack.js';
import type { LevelFlags } from '../repack/levels.js';
import { parseArgs, positionals } from './args.js';
import { UsageError } from './io.js';
import { checked, levelInputsOf, withLevelOptions } from './level-options.js';
import type { CliContext } from './main.js';
import { phaseReporter, wantProgress, warn } from './progress.js';
import { openRepository } from './repo.js';
import { refuseRepackHabits, withRepackHabits } from './repack-habits.js';

export const REPACK_USAGE = `usage: git repack-ts [<options>]

    --graph-compression <n>
                          zlib level (-1..9, or auto) for commits and trees
    --commit-compression <n>, --tree-compression <n>, --blob-compression <n>, --tag-compression <n>
                          zlib level for one object type (or keep: as it is)
    --compression <n>     zlib level for every type without a more specific setting
    --dry-run             show what would change; touch nothing
    --json                print a machine-readable summary
    --fsck <mode>         what git checks: changed (default: git index-pack reads back every
                          entry written anew), full or connectivity (git fsck)
    --no-fsck             no git check (our own proof of the new pack still runs)
    --keep-pack <name>    leave this pack alone (repeatable), like a .keep file
    -a, --all             every pack into one, even those an earlier run left at these levels
    --auto                run only when enough objects are not at these levels yet
                          (repackTs.auto, default 1000; 0 turns it off)
    --zstd[=<level>] -o <file>
                          write every object into a zstd pack <file> instead (outside the
                          repository; default level 10); --dict-size=<bytes> (default 112640)
                          or --no-dict for its dictionaries; types at level 0 are stored plain
    -q, --quiet           no progress
    --progress            force progress on stderr
    -a, -A, -d, -k, -l    git repack's habits, accepted: what the rewrite always does

Levels also come from config: pack.commitCompression, pack.treeCompression, pack.blobCompression,
pack.tagCompression, pack.graphCompression, pack.compression, core.compression. A type none of
them sets keeps its entries as they are.
`;

/** git's advise() shape: what to set when nothing is, before a run that can only copy. */
const NO_LEVEL_HINT = `hint: No zlib level is set for any object type, so every entry is kept as it is.
hint: Set one with --graph-compression=<n> (commits and trees), --compression=<n>, or the config
hint: pack.graphCompression, pack.compression or core.compression; see 'git help repack-ts'.
`;

function pct(a: number, b: number): string {
  if (b === 0) return '';
  const v = ((a - b) / b) * 100;
  return ` (${v >= 0 ? '+' : ''}${v.toFixed(1)}%)`;
}

export async function runRepack(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, REPACK_USAGE, (y) =>
    // git repack's own options last: ambiguous prefixes name ours first, as before them.
    withRepackHabits(
      withLevelOptions(y)
        .option('dry-run', { alias: 'n', type: 'boolean', default: false })
        .option('json', { type: 'boolean', default: false })
        .option('keep-pack', { type: 'string', array: true })
        .option('all', { alias: 'a', type: 'boolean', default: false })
        .option('auto', { type: 'boolean', default: false })
        .option('zstd', { type: 'string', optionalValue: true })
        .option('output', { alias: 'o', type: 'string' })
        .option('dict-size', { type: 'string' })
        .option('dict', { type: 'boolean', default: true })
        .option('dict-trainer', { type: 'string' })
        .option('quiet', { alias: 'q', type: 'boolean' })
        .option('progress', { type: 'boolean' }),
    ),
  );
  refuseRepackHabits(o, REPACK_USAGE);
  const extra = positionals(o);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, REPACK_USAGE);
  const { io } = ctx;
  const request = checked(REPACK_USAGE, () =>
    parseRepackOptions(
      {
        ...levelInputsOf(o),
        dryRun: o['dry-run'],
        fsck: o.fsck,
        keepPacks: o['keep-pack'] ?? [],
        all: o.all || o.A === true,
        writeBitmapIndex: o['write-bitmap-index'],
        auto: o.auto,
        onProgress: phaseReporter(
          io,
          !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress }),
        ),
        onWarning: (m) => warn(io, m),
      },
      'flag',
    ),
  );
  if (o.zstd !== undefined) return runExport(o, request.levelFlags, ctx);
  if (o.output !== undefined) throw new UsageError('-o/--output goes with --zstd', REPACK_USAGE);
  const repo = openRepository(ctx);
  const options = resolveRepackOptions(request, repo.config);
  if (
    !o.json &&
    !o.quiet &&
    !o.auto &&
    [1, 2, 3, 4].every((t) => options.levels[t as 1 | 2 | 3 | 4] === 'keep')
  )
    io.err(NO_LEVEL_HINT);
  // The library's rewrite with the library's resolver: --json prints what the API's repack() resolves to.
  const r = await repack(repo, options);
  if (o.json) {
    io.out(JSON.stringify(r, null, 2) + '\n');
    return 0;
  }
  // As git gc --auto: nothing printed when there is too little to do.
  if (r.auto?.run === false) return 0;
  if (!o.quiet || r.dryRun) io.out(summary(r));
  return 0;
}

function summary(r: RepackResult): string {
  const lines: string[] = [];
  const L = r.levels;
  lines.push(`levels: commit ${L.commit}, tree ${L.tree}, blob ${L.blob}, tag ${L.tag}`);
  if (r.partitions.length === 0)
    lines.push(r.provenPacks.length > 0 ? 'nothing new to repack' : 'nothing to repack');
  for (const p of r.partitions) {
    const s = p.stats;
    const re = s.reencoded;
    const reTotal = re.commit + re.tree + re.blob + re.tag;
    const head = `${p.kind === 'promisor' ? 'promisor ' : ''}objects: ${s.objects} from ${p.sourcePacks.length} pack${p.sourcePacks.length === 1 ? '' : 's'} and ${p.looseObjects} loose`;
    lines.push(head);
    lines.push(
      `  copied ${s.copied}, re-encoded ${reTotal} (commits ${re.commit}, trees ${re.tree}, blobs ${re.blob}, tags ${re.tag}), written whole ${s.whole}, from loose ${s.loose}`,
    );
    if (s.duplicatesDropped || s.excluded)
      lines.push(`  duplicates dropped ${s.duplicatesDropped}, left in kept packs ${s.excluded}`);
    const size = `${s.bytesOut} bytes${pct(s.bytesOut, s.bytesIn)}`;
    if (r.dryRun) lines.push(`  would write ${size}`);
    else if (p.unchanged) lines.push(`  ${p.newPack ?? 'pack'} unchanged (${size})`);
    else lines.push(`  wrote ${p.newPack}.pack, ${size}`);
  }
  if (!r.dryRun) {
    if (r.removedPacks.length || r.removedLoose)
      lines.push(
        `removed ${r.removedPacks.length} old pack${r.removedPacks.length === 1 ? '' : 's'} and ${r.removedLoose} loose object${r.removedLoose === 1 ? '' : 's'}`,
      );
    if (r.midx !== 'none') lines.push(`multi-pack-index ${r.midx}`);
    if (r.keptPacks.length) lines.push(`left alone: ${r.keptPacks.join(', ')}`);
    if (r.provenPacks.length)
      lines.push(
        `already at these levels, left as they are: ${r.provenPacks.length} pack${r.provenPacks.length === 1 ? '' : 's'}`,
      );
    if (r.looseLeft.length)
      lines.push(
        `left loose: ${r.looseLeft.length} object${r.looseLeft.length === 1 ? '' : 's'} of a type no pack can hold`,
      );
    if (r.leftoversCleaned.length)
      lines.push(
        `cleaned up after an earlier interrupted run: ${r.leftoversCleaned.length} file(s)`,
      );
  }
  return lines.join('\n') + '\n';
}

async function runExport(
  o: {
    zstd?: string;
    output?: string;
    json?: boolean;
    quiet?: boolean;
    progress?: boolean;
    'dict-size'?: string;
    dict?: boolean;
    'dict-trainer'?: string;
  },
  flags: LevelFlags,
  ctx: CliContext,
): Promise<number> {
  // The export's code is loaded only for an export: a rewrite, above all one with nothing to do,
  // starts without it (issue 35).
  const [{ DEFAULT_ZSTD_LEVEL }, { zstdExportRepo }] = await Promise.all([
    import('../commands/zstd.js'),
    import('../api/zstd.js'),
  ]);
  const level = o.zstd === '' || o.zstd === undefined ? DEFAULT_ZSTD_LEVEL : Number(o.zstd);
  if (!Number.isInteger(level) || level < 1 || level > 22)
    throw new UsageError(`--zstd expects a level from 1 to 22, not '${o.zstd}'`, REPACK_USAGE);
  if (o.output === undefined || o.output === '')
    throw new UsageError('--zstd needs -o <file>', REPACK_USAGE);
  let dictSize = DEFAULT_DICT_SIZE;
  if (o['dict-size'] !== undefined) {
    dictSize = Number(o['dict-size']);
    if (!Number.isInteger(dictSize) || dictSize < 1024 || dictSize > 1 << 24)
      throw new UsageError(
        `--dict-size expects a number of bytes from 1024 to 16777216, not '${o['dict-size']}'`,
        REPACK_USAGE,
      );
  }
  if (o.dict === false) dictSize = 0;
  const trainer = o['dict-trainer'] ?? 'auto';
  if (trainer !== 'auto' && trainer !== 'js')
    throw new UsageError(`--dict-trainer expects 'auto' or 'js', not '${trainer}'`, REPACK_USAGE);
  const { io } = ctx;
  const repo = openRepository(ctx);
  const progress = phaseReporter(
    io,
    !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress }),
  );
  // The library's export: --json prints exactly what the API's zstdExport() resolves to.
  const r = await zstdExportRepo(repo, resolve(ctx.cwd, o.output), {
    ...flags,
    level,
    dictSize: dictSize === 0 ? false : dictSize,
    dictTrainer: trainer,
    onProgress: progress,
  });
  if (o.json) {
    io.out(JSON.stringify(r, null, 2) + '\n');
    return 0;
  }
  if (!o.quiet) {
    io.out(
      `wrote ${r.path}: ${r.objects} objects, ${r.bytes} bytes${pct(r.bytes, r.sourceBytes)} against the packs, zstd level ${r.level}\n`,
    );
    for (const d of r.dictionaries)
      io.out(`  dictionary ${d.kind}: ${d.bytes} bytes from ${d.samples} samples (${d.method})\n`);
  }
  return 0;
}
