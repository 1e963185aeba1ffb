#!/usr/bin/env node
// Levels mean what they say, on a real repository: for every A and S in {0, 1, 6, 9, auto, keep},
// `X → A → S` gives the same per-entry encodings (stored or not, zlib FLEVEL) as `X → S`
// (`X → A → keep` as `X → A`), and `--dry-run` predicts the size the real run writes.
//
//   node bench/converge.mjs <git-dir> [<scratch-dir>] [--targets=0,1,6,9,auto,keep] [--types=graph|all]
//
// Works on a copy (the repository is only read). Entries are read at the offsets git's
// show-index gives. Prints one line per path and exits 1 on any disagreement.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.join(here, '..', 'bin', 'git-repack-ts.js');
const args = process.argv.slice(2);
const opt = (name, dflt) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const [src, scratchArg] = args.filter((a) => !a.startsWith('--'));
if (!src) {
  console.error(
    'usage: node bench/converge.mjs <git-dir> [<scratch-dir>] [--targets=…] [--types=graph|all]',
  );
  process.exit(129);
}
const targets = opt('targets', '0,1,6,9,auto,keep').split(',');
const types =
  opt('types', 'graph') === 'all' ? ['commit', 'tree', 'blob', 'tag'] : ['commit', 'tree'];
const scratch = fs.mkdtempSync(path.join(scratchArg ?? os.tmpdir(), 'converge-'));

function copy(from, name) {
  const to = path.join(scratch, name);
  fs.cpSync(from, to, { recursive: true });
  return to;
}

function rewrite(dir, t, extra = []) {
  const levelArgs = types.map((k) => `--${k}-compression=${t}`);
  const r = spawnSync(
    process.execPath,
    [BIN, `--git-dir=${dir}`, '--json', '--no-fsck', ...levelArgs, ...extra],
    { encoding: 'utf8', maxBuffer: 1 << 28 },
  );
  if (r.status !== 0) throw new Error(`rewrite ${t} ${extra.join(' ')} failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  const sum = (f) => out.partitions.reduce((a, p) => a + f(p.stats), 0);
  return {
    bytesOut: sum((s) => s.bytesOut),
    reencoded: sum((s) => Object.values(s.reencoded).reduce((a, b) => a + b, 0)),
  };
}

/** id → "flevel F[ stored]" for every entry of every pack. */
function census(dir) {
  const out = new Map();
  const packDir = path.join(dir, 'objects', 'pack');
  for (const f of fs.readdirSync(packDir).filter((n) => n.endsWith('.pack'))) {
    const pack = fs.readFileSync(path.join(packDir, f));
    const idx = fs.readFileSync(path.join(packDir, f.slice(0, -5) + '.idx'));
    const rows = execFileSync('git', ['--git-dir', dir, 'show-index'], {
      input: idx,
      maxBuffer: 1 << 30,
    })
      .toString()
      .trim()
      .split('\n')
      .map((l) => l.split(' '));
    for (const [off, id] of rows) {
      let p = Number(off);
      let c = pack[p++];
      const type = (c >> 4) & 7;
      while (c & 0x80) c = pack[p++];
      if (type === 6) while (pack[p++] & 0x80);
      if (type === 7) p += 20;
      // Stored or not counts in FLEVEL 0, where it tells level 0 from level 1. At higher FLEVELs a
      // stored block is that level's own output for data it cannot shrink, and zlib builds differ
      // in that choice (GitHub's packs against node's zlib: 663 of jq's 23k entries at level 6).
      const flevel = pack[p + 1] >> 6;
      const stored = ((pack[p + 2] >> 1) & 3) === 0;
      out.set(
        id,
        `flevel ${flevel}${stored ? (flevel === 0 ? ' stored' : ' (stored block)') : ''}`,
      );
    }
  }
  return out;
}

/** Entries whose encodings differ: FLEVEL, and stored or not in FLEVEL 0. */
function diff(a, b) {
  const key = (e) => e?.replace(' (stored block)', '');
  let n = 0;
  for (const [id, e] of a) {
    if (key(b.get(id)) === key(e)) continue;
    if (n++ < 3) console.log(`  ${id}: ${e} here, ${b.get(id)} there`);
  }
  return n + Math.abs(a.size - b.size);
}

function tally(c) {
  const t = {};
  for (const e of c.values()) t[e] = (t[e] ?? 0) + 1;
  return Object.entries(t)
    .sort()
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');
}

let bad = 0;
const t0 = Date.now();
const direct = new Map();
for (const s of targets) {
  const dir = copy(src, `direct-${s}`);
  const dry = rewrite(dir, s, ['--dry-run']);
  const real = rewrite(dir, s);
  const c = census(dir);
  direct.set(s, c);
  const again = rewrite(dir, s).reencoded;
  const ok = dry.bytesOut === real.bytesOut && again === 0;
  if (!ok) bad++;
  console.log(
    `X → ${s}: dry run ${dry.bytesOut}, written ${real.bytesOut}${dry.bytesOut === real.bytesOut ? ' (exact)' : ' MISMATCH'}; a second run re-encodes ${again}; ${tally(c)}`,
  );
  fs.rmSync(dir, { recursive: true, force: true });
}
for (const a of targets.filter((x) => x !== 'keep')) {
  const first = copy(src, `via-${a}`);
  rewrite(first, a);
  const afterA = census(first);
  for (const s of targets) {
    const dir = copy(first, `via-${a}-${s}`);
    const r = rewrite(dir, s);
    const d = diff(census(dir), s === 'keep' ? afterA : direct.get(s));
    if (d > 0) bad++;
    console.log(
      `X → ${a} → ${s}: ${d === 0 ? 'same encodings as' : `${d} entries differ from`} ${s === 'keep' ? `X → ${a}` : `X → ${s}`} (re-encoded ${r.reencoded})`,
    );
    fs.rmSync(dir, { recursive: true, force: true });
  }
  fs.rmSync(first, { recursive: true, force: true });
}
fs.rmSync(scratch, { recursive: true, force: true });
console.log(
  `${bad === 0 ? 'all paths converge' : `${bad} disagreements`} (${((Date.now() - t0) / 1000).toFixed(0)} s; targets for ${types.join(', ')})`,
);
process.exit(bad === 0 ? 0 : 1);
