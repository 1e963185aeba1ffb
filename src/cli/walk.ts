import { listRefs } from '../store/refs.js';
import { resolve } from 'node:path';
import { readShallow, walkRepo } from '../api/walk.js';
import { GitError } from '../errors.js';
import type { Repository } from '../store/repo.js';
import { walkObjects, type WalkResult } from '../commands/walk.js';
import { ObjectDatabase } from '../store/odb.js';
import { Pack } from '../store/pack.js';
import { SHA1 } from '../hash/algo.js';
import { parseArgs, positionals } from './args.js';
import type { CliContext } from './main.js';
import { openRepository } from './repo.js';

export const WALK_USAGE = `usage: git repack-ts walk [--read-blobs] [--json] [<pack>|<file.zpack>...]

Reads every object reachable from the refs through git-repack-ts's own reader, like
'git rev-list --objects --all' (commits and trees read and parsed; blobs named, or read too with
--read-blobs). With packs named, only they are read: a zstd pack brings its own refs.

    --read-blobs          inflate every blob as well
    --json                print a machine-readable result
`;

export async function runWalk(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, WALK_USAGE, (y) =>
    y
      .option('read-blobs', { type: 'boolean', default: false })
      .option('json', { type: 'boolean', default: false }),
  );
  const named = positionals(o);
  try {
    // The library's walk: --json prints exactly what the API's walk() resolves to.
    printWalk(
      named.length === 0
        ? walkRepo(openRepository(ctx), { readBlobs: o['read-blobs'] })
        : walkPacks(named, o['read-blobs'], ctx),
      o.json,
      ctx,
    );
  } catch (e) {
    // git's `error: Could not read <parent>` before its `fatal: Failed to traverse parents of commit <child>`.
    if (e instanceof GitError && e.code === 'missing-object' && e.detail !== e.message)
      ctx.io.err(`error: ${e.detail}\n`);
    throw e;
  }
  return 0;
}

/** The walk through the packs named only, from their refs (a zstd pack's) or the repository's. */
function walkPacks(named: string[], readBlobs: boolean, ctx: CliContext): WalkResult {
  let repo: Repository | undefined;
  try {
    repo = openRepository(ctx);
  } catch {
    // outside a repository: zstd packs say their own format
  }
  const packs = named.map((n) => Pack.open(resolve(ctx.cwd, n), repo?.algo ?? SHA1));
  const odb = new ObjectDatabase(packs[0]!.algo, []);
  let refs = '';
  for (const p of packs) {
    odb.addPack(p);
    if (p.zpack) refs += p.zpack.refs;
  }
  try {
    if (refs === '') refs = listRefs((repo ?? openRepository(ctx)).gitDir, ctx.io.env);
    return walkObjects(odb, odb.algo, refs, {
      readBlobs,
      shallow: repo === undefined ? undefined : readShallow(repo),
    });
  } finally {
    odb.close();
  }
}

function printWalk(r: WalkResult, json: boolean, ctx: CliContext): void {
  if (json) ctx.io.out(JSON.stringify(r, null, 2) + '\n');
  else
    ctx.io.out(
      `${r.commits} commits, ${r.trees} trees, ${r.blobs} blobs, ${r.tags} tags, ${r.missing} missing; ${(r.bytesRead / 1048576).toFixed(1)} MiB read in ${(r.ms / 1000).toFixed(2)} s\n`,
    );
}
