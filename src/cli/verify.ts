import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { GitError } from '../errors.js';
import { verifyPack, verifySummaryLines, type VerifyPackResult } from '../commands/verify.js';
import { listPackFiles } from '../store/odb.js';
import { parseArgs, positionals } from './args.js';
import type { CliContext } from './main.js';
import { phaseReporter, wantProgress } from './progress.js';
import { openRepository } from './repo.js';
import { SHA1, hashAlgoByName, type HashAlgo } from '../hash/algo.js';

export const VERIFY_USAGE = `usage: git repack-ts verify [-v | --verbose] [-s | --stat-only] [--json] [--object-format=<hash>] [--] [<pack>...]

    -v, --verbose         list every object like 'git verify-pack -v'
    -s, --stat-only       show the delta chain statistics only
    --json                print a machine-readable result
    --object-format <hash>
                          sha1 or sha256 (default: the repository's)
    -q, --quiet           no progress
    --progress            force progress on stderr
`;

/** Normalises `foo`, `foo.idx` and `foo.pack` to the pair of paths, as verify-pack does. */
function packPair(arg: string, cwd: string): { pack: string; idx: string; shown: string } {
  // A zstd pack carries its own index.
  if (arg.endsWith('.zpack')) return { pack: resolve(cwd, arg), idx: resolve(cwd, arg), shown: arg };
  const base = arg.replace(/\.(idx|pack)$/, '');
  return { pack: resolve(cwd, base + '.pack'), idx: resolve(cwd, base + '.idx'), shown: base + '.pack' };
}

export async function runVerify(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, VERIFY_USAGE, (y) =>
    y
      .option('verbose', { alias: 'v', type: 'boolean', default: false })
      .option('stat-only', { alias: 's', type: 'boolean', default: false })
      .option('json', { type: 'boolean', default: false })
      .option('object-format', { type: 'string' })
      .option('quiet', { alias: 'q', type: 'boolean' })
      .option('progress', { type: 'boolean' }),
  );
  const { io } = ctx;
  const named = positionals(o);
  let algo: HashAlgo | undefined;
  if (o['object-format'] !== undefined) {
    algo = hashAlgoByName(o['object-format']);
    if (!algo) throw new GitError('usage', `unknown hash algorithm '${o['object-format']}'`);
  }
  let targets: { pack: string; idx: string; shown: string }[];
  let bigFileThreshold: number | undefined;
  if (named.length > 0) {
    targets = named.map((a) => packPair(a, ctx.cwd));
    if (algo === undefined) {
      // Like verify-pack: the repository's format when inside one, SHA-1 otherwise.
      try {
        const repo = openRepository(ctx);
        algo = repo.algo;
        bigFileThreshold = repo.config.getInt('core.bigFileThreshold');
      } catch {
        algo = SHA1;
      }
    }
  } else {
    const repo = openRepository(ctx);
    algo ??= repo.algo;
    bigFileThreshold = repo.config.getInt('core.bigFileThreshold');
    targets = listPackFiles(repo.objectsDir).map((p) => {
      const rel = relative(ctx.cwd, p);
      return { pack: p, idx: p.replace(/\.pack$/, '.idx'), shown: rel.startsWith('..') ? p : rel };
    });
  }
  const progress = phaseReporter(io, !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress }));
  const results: (VerifyPackResult & { shown: string; entries?: VerboseEntry[] })[] = [];
  let bad = 0;
  for (const t of targets) {
    if (!existsSync(t.idx) && !existsSync(t.pack)) {
      io.err(`fatal: Cannot open existing pack file '${t.shown}'\n`);
      bad++;
      results.push({ ...emptyResult(t.pack), shown: t.shown });
      continue;
    }
    // -v --json: every object as a record, the same fields as the lines of `git verify-pack -v`.
    const entries: VerboseEntry[] = [];
    const verboseLine = !o.verbose || o['stat-only'] ? undefined : o.json ? (l: string) => entries.push(verboseEntry(l)) : (l: string) => io.out(l + '\n');
    const r = await verifyPack(t.pack, t.idx, algo, { verboseLine, onProgress: progress, bigFileThreshold });
    results.push({ ...r, shown: t.shown, ...(verboseLine !== undefined && o.json ? { entries } : {}) });
    if (!o.json) {
      for (const p of r.problems) io.err(`error: ${p.file}: ${p.message} at offset ${p.offset}\n`);
      if (r.moreProblems) io.err(`error: ... and ${r.moreProblems} more problems in ${t.shown}\n`);
      if (o.verbose || o['stat-only']) {
        for (const l of verifySummaryLines(r)) io.out(l + '\n');
      }
      if (o.verbose) io.out(`${t.shown}: ${r.ok ? 'ok' : 'bad'}\n`);
    }
    if (!r.ok) bad++;
  }
  if (o.json) {
    io.out(
      JSON.stringify(
        {
          ok: bad === 0,
          packs: results.map((r) => ({
            pack: r.shown,
            ok: r.ok,
            objects: r.objects,
            nonDelta: r.nonDelta,
            chainLengths: r.chainLengths,
            problems: r.problems,
            moreProblems: r.moreProblems,
            ...(r.entries !== undefined ? { entries: r.entries } : {}),
          })),
        },
        null,
        2,
      ) + '\n',
    );
  }
  return bad === 0 ? 0 : 1;
}

interface VerboseEntry {
  id: string;
  type: string;
  size: number;
  packedSize: number;
  offset: number;
  depth?: number;
  base?: string;
}

/** `<id> <type> <size> <size-in-pack> <offset> [<depth> <base-id>]`, as git verify-pack -v prints it. */
function verboseEntry(line: string): VerboseEntry {
  const [id, type, size, packedSize, offset, depth, base] = line.trim().split(/\s+/);
  const e: VerboseEntry = { id: id!, type: type!, size: Number(size), packedSize: Number(packedSize), offset: Number(offset) };
  if (depth !== undefined && base !== undefined) Object.assign(e, { depth: Number(depth), base });
  return e;
}

function emptyResult(pack: string): VerifyPackResult {
  return { pack, ok: false, objects: 0, nonDelta: 0, chainLengths: [], problems: [{ file: pack, offset: 0, message: 'cannot open pack' }], moreProblems: 0 };
}
