import { relative } from 'node:path';
import { GitError } from '../errors.js';
import { verifyTarget, verifyTargets, type VerifyTarget } from '../api/verify.js';
import { verifySummaryLines } from '../commands/verify.js';
import { listPackFiles } from '../store/odb.js';
import { shownPath, swapExt } from '../store/fs-path.js';
import { parseArgs, positionals } from './args.js';
import type { CliContext } from './main.js';
import { phaseReporter, wantProgress } from './progress.js';
import { openRepository } from './repo.js';
import { SHA1, hashAlgoByName, type HashAlgo } from '../hash/algo.js';
import { WriteFailure } from './output.js';

export const VERIFY_USAGE = `usage: git repack-ts verify [-v | --verbose] [-s | --stat-only] [--json] [--object-format=<hash>] [--] [<pack>...]

    -v, --verbose         list every object like 'git verify-pack -v'
    -s, --stat-only       show the delta chain statistics only
    --json                print a machine-readable result
    --object-format <hash>
                          sha1 or sha256 (default: the repository's)
    -q, --quiet           no progress
    --progress            force progress on stderr
`;

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
  let targets: VerifyTarget[];
  let bigFileThreshold: number | undefined;
  if (named.length > 0) {
    targets = named.map((a) => verifyTarget(a, ctx.cwd));
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
      const shown = shownPath(p);
      const rel = relative(ctx.cwd, shown);
      return {
        pack: p,
        idx: swapExt(p, '.pack', '.idx'),
        shown: rel.startsWith('..') ? shown : rel,
      };
    });
  }
  const progress = phaseReporter(
    io,
    !o.json && wantProgress(io, { quiet: o.quiet, progress: o.progress }),
  );
  try {
    return await verifyAndPrint(
      targets,
      {
        algo,
        bigFileThreshold,
        progress,
        json: o.json,
        verbose: o.verbose,
        statOnly: o['stat-only'],
      },
      io,
    );
  } catch (e) {
    // git verify-pack's index-pack dies of it (128) and verify-pack reports the pack as failed: 1.
    if (!(e instanceof WriteFailure)) throw e;
    io.err(`fatal: ${e.message}\n`);
    return 1;
  }
}

interface PrintOptions {
  algo: HashAlgo;
  bigFileThreshold: number | undefined;
  progress: ReturnType<typeof phaseReporter>;
  json: boolean;
  verbose: boolean;
  statOnly: boolean;
}

async function verifyAndPrint(
  targets: VerifyTarget[],
  p: PrintOptions,
  io: CliContext['io'],
): Promise<number> {
  const o = { json: p.json, verbose: p.verbose, 'stat-only': p.statOnly };
  const { algo, bigFileThreshold, progress } = p;
  // The library's verify: --json prints exactly what the API's verify() resolves to.
  const report = await verifyTargets(targets, {
    algo,
    bigFileThreshold,
    onProgress: progress,
    verboseLine:
      o.verbose && !o['stat-only'] && !o.json ? (l: string) => io.out(l + '\n') : undefined,
    // -v --json: every object as a record, the same fields as the lines of `git verify-pack -v`.
    entries: o.verbose === true && !o['stat-only'] && o.json === true,
    onPack: (r, missing) => {
      // git verify-pack opens the index first and names it, as given (`x.pack` gives `x.idx`).
      if (missing)
        io.err(`fatal: Cannot open existing pack file '${r.pack.replace(/\.pack$/, '.idx')}'\n`);
      if (missing && o.verbose && !o.json) io.out(`${r.pack}: bad\n`);
      if (missing || o.json) return;
      for (const p of r.problems) io.err(`error: ${p.file}: ${p.message} at offset ${p.offset}\n`);
      if (r.moreProblems) io.err(`error: ... and ${r.moreProblems} more problems in ${r.pack}\n`);
      if (o.verbose || o['stat-only']) {
        for (const l of verifySummaryLines(r)) io.out(l + '\n');
      }
      if (o.verbose) io.out(`${r.pack}: ${r.ok ? 'ok' : 'bad'}\n`);
    },
  });
  if (o.json) io.out(JSON.stringify(report, null, 2) + '\n');
  return report.ok ? 0 : 1;
}
