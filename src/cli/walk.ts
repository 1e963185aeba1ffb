import { listRefs } from '../store/refs.js';
import { resolve } from 'node:path';
import { walkRepo } from '../api/walk.js';
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
  const o = await parseArgs(args, WALK_USAGE, (y) => y.option('read-blobs', { type: 'boolean', default: false }).option('json', { type: 'boolean', default: false }));
  const named = positionals(o);
  if (named.length === 0) {
    // The library's walk: --json prints exactly what the API's walk() resolves to.
    printWalk(walkRepo(openRepository(ctx), { readBlobs: o['read-blobs'] }), o.json, ctx);
    return 0;
  }
  let algo = SHA1;
  try {
    algo = openRepository(ctx).algo;
  } catch {
    // outside a repository: zstd packs say their own format
  }
  const packs = named.map((n) => Pack.open(resolve(ctx.cwd, n), algo));
  const odb = new ObjectDatabase(packs[0]!.algo, []);
  let refs = '';
  for (const p of packs) {
    odb.addPack(p);
    if (p.zpack) refs += p.zpack.refs;
  }
  try {
    if (refs === '') refs = listRefs(openRepository(ctx).gitDir, ctx.io.env);
    printWalk(walkObjects(odb, odb.algo, refs, { readBlobs: o['read-blobs'] }), o.json, ctx);
  } finally {
    odb.close();
  }
  return 0;
}

function printWalk(r: WalkResult, json: boolean, ctx: CliContext): void {
  if (json) ctx.io.out(JSON.stringify(r, null, 2) + '\n');
  else ctx.io.out(`${r.commits} commits, ${r.trees} trees, ${r.blobs} blobs, ${r.tags} tags, ${r.missing} missing; ${(r.bytesRead / 1048576).toFixed(1)} MiB read in ${(r.ms / 1000).toFixed(2)} s\n`);
}
