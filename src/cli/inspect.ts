import { relative } from 'node:path';
import { inspectRepo } from '../api/inspect.js';
import type { TypeCensus } from '../commands/inspect.js';
import { parseArgs } from './args.js';
import type { CliContext } from './main.js';
import { openRepository } from './repo.js';

export const INSPECT_USAGE = `usage: git repack-ts inspect [--json]

    --json                print a machine-readable census
`;

function mib(n: number): string {
  return (n / (1024 * 1024)).toFixed(2) + ' MiB';
}

function pct(a: number, b: number): string {
  if (b === 0) return '0.0%';
  const v = ((a - b) / b) * 100;
  return (v >= 0 ? '+' : '') + v.toFixed(1) + '%';
}

export async function runInspect(args: string[], ctx: CliContext): Promise<number> {
  const o = await parseArgs(args, INSPECT_USAGE, (y) =>
    y.option('json', { type: 'boolean', default: false }),
  );
  if (o._.length > 0)
    throw new (await import('./io.js')).UsageError(
      `unexpected argument '${o._[0]}'`,
      INSPECT_USAGE,
    );
  const repo = openRepository(ctx);
  // The library's census: --json prints exactly what the API's inspect() resolves to.
  const r = inspectRepo(repo);
  const { io } = ctx;
  if (o.json) {
    io.out(JSON.stringify(r, null, 2) + '\n');
    return 0;
  }
  const show = (p: string): string => {
    const rel = relative(ctx.cwd, p);
    return rel.startsWith('..') ? p : rel;
  };
  io.out(
    `${r.packs.length} pack${r.packs.length === 1 ? '' : 's'}, ${r.total.objects} packed objects, ${r.loose} loose objects, ${mib(r.total.packBytes)}\n`,
  );
  for (const p of r.packs) {
    const flags = [p.promisor ? 'promisor' : '', p.keep ? 'keep' : ''].filter(Boolean).join(', ');
    io.out(
      `  ${show(p.pack)}: ${p.objects} objects, ${mib(p.size)}${flags ? ` (${flags})` : ''}\n`,
    );
  }
  io.out('\n');
  const rows: string[][] = [
    [
      'type',
      'entries',
      'deltas',
      'max depth',
      'packed',
      'inflated',
      'stored plain',
      'zlib levels 0-1/2-5/6/7-9',
      'packed if all level 0',
    ],
  ];
  for (const t of r.total.types as TypeCensus[]) {
    if (t.entries === 0) continue;
    rows.push([
      t.type,
      String(t.entries),
      String(t.deltas),
      String(Math.max(0, t.depthHistogram.length - 1)),
      mib(t.packedBytes),
      mib(t.inflatedBytes),
      String(t.stored),
      t.zlibLevels.join('/'),
      `${mib(t.packedBytesAtLevel0)} (${pct(t.packedBytesAtLevel0, t.packedBytes)})`,
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  for (const row of rows)
    io.out(
      row
        .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
        .join('  ') + '\n',
    );
  io.out('\n');
  io.out(
    `with commits and trees stored uncompressed (level 0): ${mib(r.total.packBytesGraphLevel0)} (${pct(r.total.packBytesGraphLevel0, r.total.packBytes)})\n`,
  );
  io.out('delta depth histogram (depth: entries):\n');
  for (const t of r.total.types) {
    if (t.entries === 0) continue;
    const h = t.depthHistogram.map((c, d) => (c ? `${d}:${c}` : '')).filter(Boolean);
    io.out(`  ${t.type}: ${h.join(' ')}\n`);
  }
  return 0;
}
