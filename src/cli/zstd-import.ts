import { resolve } from 'node:path';
import { parseFsck, parseLevels, resolveLevelOptions } from '../commands/options.js';
import { importZpack, type ImportResult, type RefUpdate } from '../commands/zstd-import.js';
import { parseArgs, positionals } from './args.js';
import { UsageError } from './io.js';
import { checked, levelInputsOf, withLevelOptions } from './level-options.js';
import type { CliContext } from './main.js';
import { phaseReporter, wantProgress, warn } from './progress.js';
import { openRepository } from './repo.js';

export const ZSTD_IMPORT_USAGE = `usage: git repack-ts zstd-import [<level options>] [--fsck=<mode> | --no-fsck] [--force] [--json] [-q] <file>

Turns a zstd pack written by 'git repack-ts --zstd -o <file>' back into a normal pack of this
repository (every object and delta kept, every object hashed), at the levels 'git repack-ts'
would use, then sets the refs it carries as 'git fetch <file> refs/*:refs/*' would: missing refs
are created, a ref that differs is left alone (exit 1) unless --force; HEAD is set only when the
repository has no commit on its current branch. The work tree and index are not touched.

    --graph-compression <n>, --commit-compression <n>, --tree-compression <n>,
    --blob-compression <n>, --tag-compression <n>, --compression <n>
                          zlib levels, as for the rewrite (config keys apply too)
    --fsck <mode>         full (default) or connectivity
    --no-fsck             skip git fsck (every object is still hashed, the proof still runs)
    -f, --force           replace refs that differ from the zpack's
    --json                print a machine-readable summary
    -q, --quiet           no progress, no ref report
`;

/** `git fetch`'s ref names in its report (`prettify_refname`): branches, tags and remotes by their short name. */
function pretty(ref: string): string {
  for (const p of ['refs/heads/', 'refs/tags/', 'refs/remotes/'])
    if (ref.startsWith(p)) return ref.slice(p.length);
  return ref;
}

/** A name from the zpack, printable whatever bytes it holds. */
function quoted(ref: string): string {
  return JSON.stringify(ref).slice(1, -1);
}

/** The name column's width (`adjust_refcol_width`): 10, or the longest name shown if its line fits 80 columns. */
function refColumn(refs: RefUpdate[]): number {
  let width = 10;
  for (const u of refs) {
    const len = pretty(u.ref).length;
    if (u.status !== 'up-to-date' && u.reason !== 'invalid ref name' && 21 + 2 * len <= 80)
      width = Math.max(width, len);
  }
  return width;
}

/** One line of `git fetch`'s report (`format_display`: flag, summary, name -> name, reason), or undefined. */
function refLine(u: RefUpdate, width: number): string | undefined {
  const name = pretty(u.ref).padEnd(width);
  const to = `${name} -> ${pretty(u.ref)}`;
  const kind = u.ref.startsWith('refs/heads/')
    ? 'branch'
    : u.ref.startsWith('refs/tags/')
      ? 'tag'
      : 'ref';
  if (u.status === 'new') return ` * ${`[new ${kind}]`.padEnd(17)} ${to}`;
  if (u.status === 'forced' && kind === 'tag') return ` t ${'[tag update]'.padEnd(17)} ${to}`;
  if (u.status === 'forced')
    return ` + ${`${u.old!.slice(0, 7)}...${u.id!.slice(0, 7)}`.padEnd(17)} ${to}  (forced update)`;
  if (u.status === 'rejected' && u.reason !== 'invalid ref name')
    return ` ! ${'[rejected]'.padEnd(17)} ${to}  (${u.reason})`;
  return undefined;
}

/** What the import did to the refs, as `git fetch` reports it (on stderr); errors for refs git would call funny. */
function reportRefs(r: ImportResult, quiet: boolean): string {
  const lines = quiet
    ? []
    : r.refs.map((u) => refLine(u, refColumn(r.refs))).filter((l): l is string => l !== undefined);
  if (!quiet && r.head.status === 'set') lines.push(`HEAD is now ${r.head.ref}`);
  if (!quiet && r.head.status === 'detached')
    lines.push(`HEAD is now detached at ${r.head.id!.slice(0, 7)}`);
  let out = lines.length > 0 ? `From ${r.file}\n${lines.join('\n')}\n` : '';
  // git fetch's `get_fetch_map`: "error: * Ignoring funny ref '<name>' locally".
  for (const u of r.refs)
    if (u.reason === 'invalid ref name')
      out += `error: * Ignoring funny ref '${quoted(u.ref)}' locally\n`;
  if (r.refs.some((u) => u.status === 'rejected' && u.reason?.startsWith('would clobber') === true))
    out += `hint: --force replaces the refs that differ from ${r.file}'s\n`;
  return out;
}

export async function runZstdImport(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, ZSTD_IMPORT_USAGE, (y) =>
    withLevelOptions(y)
      .option('force', { alias: 'f', type: 'boolean', default: false })
      .option('json', { type: 'boolean', default: false })
      .option('quiet', { alias: 'q', type: 'boolean' })
      .option('progress', { type: 'boolean' }),
  );
  const files = positionals(o);
  if (files.length !== 1)
    throw new UsageError(
      files.length === 0 ? 'no file given' : 'one file at a time',
      ZSTD_IMPORT_USAGE,
    );
  const { io } = ctx;
  const flags = checked(ZSTD_IMPORT_USAGE, () => parseLevels(levelInputsOf(o), 'flag'));
  const fsck = checked(ZSTD_IMPORT_USAGE, () => parseFsck(o.fsck, 'flag', 'zstd-import'));
  const repo = openRepository(ctx);
  // The library's import with the library's resolver (api/zstd.ts zstdImportRepo).
  const r = await importZpack(repo, resolve(ctx.cwd, files[0]!), {
    ...resolveLevelOptions(flags, repo.config),
    fsck,
    force: o.force,
    onProgress: phaseReporter(
      io,
      !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress }),
    ),
    onWarning: (m) => warn(io, m),
  });
  if (o.json) io.out(JSON.stringify(r, null, 2) + '\n');
  else if (!o.quiet)
    io.out(
      `${r.alreadyPresent ? 'already present' : 'installed'}: ${r.newPack}.pack, ${r.objects} objects${r.promisor ? ' (promisor)' : ''}\n`,
    );
  const report = o.json ? '' : reportRefs(r, o.quiet === true);
  if (report !== '') io.err(report);
  // As git fetch: a ref that could not be set is exit 1 (the objects are installed).
  return r.refs.some((u) => u.status === 'rejected') ? 1 : 0;
}
