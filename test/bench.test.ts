import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { tool } from './helpers/tool.js';
import { fsckStrict, gitOk, gitOkBuffer, objectSet, verifyPack } from './helpers/git.js';
import { makeCache } from '../src/bench/base-cache.js';
import { parseScenario, parseScenarioList } from '../src/bench/scenarios.js';
import { Critbit } from '../src/bench/lookup.js';
import { DEFAULT_AUTO_RULE } from '../src/repack/encoding.js';
import { formatReport, shareOfBoth } from '../src/bench/report.js';
import type { BenchResult } from '../src/commands/bench.js';
import { firstBlockCode } from '../src/format/zlib-stored.js';
import { OBJ_BLOB, OBJ_TREE } from '../src/format/object-type.js';
import { Prng } from './helpers/prng.js';

/** Every file under `dir` with its bytes' hash: the original repository must not change. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.set(path.relative(dir, p), crypto.createHash('sha1').update(fs.readFileSync(p)).digest('hex') + ` ${fs.statSync(p).mode}`);
      else out.set(path.relative(dir, p), 'other');
    }
  };
  walk(dir);
  return out;
}

/**
 * A small XML well-formedness check (no dependency): tags balance, attributes are quoted and
 * unique, entities are known. Returns the elements as (name, attributes).
 */
function parseXml(text: string): { name: string; attrs: Record<string, string> }[] {
  const elements: { name: string; attrs: Record<string, string> }[] = [];
  const stack: string[] = [];
  const body = text.replace(/^<\?xml[^>]*\?>\s*/, '');
  const re = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)|(<)/g;
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = re.exec(body)) !== null) {
    if (m.index !== last) throw new Error(`unexpected text at ${last}`);
    last = re.lastIndex;
    if (m[6] !== undefined) throw new Error(`bad markup at ${m.index}: ${body.slice(m.index, m.index + 40)}`);
    if (m[5] !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(m[5])) throw new Error(`bad entity in ${m[5]}`);
      if (stack.length === 0 && m[5].trim() !== '') throw new Error('text outside the root element');
      continue;
    }
    const [, close, name, attrText, selfClose] = m;
    if (close) {
      if (stack.pop() !== name) throw new Error(`</${name}> does not close the open element`);
      continue;
    }
    if (stack.length === 0 && elements.length > 0) throw new Error('more than one root element');
    const attrs: Record<string, string> = {};
    for (const a of attrText!.matchAll(/([\w:-]+)="([^"]*)"/g)) {
      if (a[1]! in attrs) throw new Error(`duplicate attribute ${a[1]}`);
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(a[2]!)) throw new Error(`bad entity in ${a[2]}`);
      attrs[a[1]!] = a[2]!;
    }
    elements.push({ name: name!, attrs });
    if (!selfClose) stack.push(name!);
  }
  if (last !== body.length) throw new Error('trailing garbage');
  if (stack.length !== 0) throw new Error(`unclosed <${stack[stack.length - 1]}>`);
  return elements;
}

describe('git repack-ts bench', () => {
  it('--runs=1 --json: a table with every scenario, sizes from the packs, the original untouched, an SVG chart', () => {
    const repo = useFixtureCopy('basic');
    const before = snapshot(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-test-'));
    try {
      const svg = path.join(tmp, 'chart.svg');
      const r = tool(['bench', '--runs=1', '--json', `--svg=${svg}`, '--keep', `--tmpdir=${tmp}`, '--log-n=50', '--min-time=0', '--clock=wall'], { cwd: repo });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout);
      expect(j.scenarios.map((s: { name: string }) => s.name)).toEqual(['none', 'commit', 'tree', 'both', 'auto']);
      expect(j.commands.map((c: { id: string }) => c.id)).toEqual(['revs', 'revs-cg', 'objects', 'objects-cg', 'log', 'log-cg']);
      expect(j.gitVersion).toMatch(/^\d+\.\d+/);
      expect(j.clock).toBe('wall');
      const ids = j.commands.map((c: { id: string }) => c.id);
      for (const s of j.scenarios) {
        // Sizes are those of the .pack files in the scenario's copy, and every object is in them.
        const packDir = path.join(s.copy, 'objects', 'pack');
        const onDisk = fs.readdirSync(packDir).filter((f) => f.endsWith('.pack'));
        expect(onDisk.length).toBe(s.packs.length);
        expect(s.packBytes).toBe(onDisk.reduce((a, f) => a + fs.statSync(path.join(packDir, f)).size, 0));
        expect(s.packs.reduce((a: number, p: { objects: number }) => a + p.objects, 0)).toBe(j.objects);
        expect(fs.existsSync(path.join(s.copy, 'objects', 'info', 'commit-graph'))).toBe(true);
        for (const id of ids) {
          expect(s.warm[id].runs).toHaveLength(1);
          expect(s.warm[id].median).toBeGreaterThan(0);
          // Both clocks are recorded for every run (CPU time in 10 ms ticks: 0 for a 3 ms command).
          expect(s.warm[id].cpu).toHaveLength(1);
          expect(s.warm[id].cpu[0]).toBeGreaterThanOrEqual(0);
        }
        if (s.name === 'none') expect(s.warm.revs.vsNone).toBe(0);
      }
      const by = Object.fromEntries(j.scenarios.map((s: { name: string }) => [s.name, s]));
      // Storing commits and trees makes the pack bigger; auto is never bigger than storing both.
      expect(by.both.packBytes).toBeGreaterThan(by.none.packBytes);
      expect(by.commit.packBytes).toBeGreaterThan(by.none.packBytes);
      expect(by.auto.packBytes).toBeLessThanOrEqual(by.both.packBytes);
      expect(by.both.reencoded.commit).toBeGreaterThan(0);
      expect(by.auto.rerunReencodes).toBe(0);
      // The auto scenario held against both: shares of its size increase and of each speed-up.
      expect(j.vsBoth).toHaveLength(1);
      expect(j.vsBoth[0].scenario).toBe('auto');
      expect(j.vsBoth[0].size).toBeCloseTo((by.auto.packBytes - by.none.packBytes) / (by.both.packBytes - by.none.packBytes), 12);
      for (const id of ids) {
        const label = j.commands.find((c: { id: string }) => c.id === id).label;
        if (by.both.warm[id].vsNone < 0) expect(j.vsBoth[0].columns[label]).toBeCloseTo(by.auto.warm[id].vsNone / by.both.warm[id].vsNone, 12);
        else expect(j.vsBoth[0].columns[label]).toBeUndefined();
      }
      expect(j.cold.requested).toBe(false);
      // The chart: well-formed, one bar per scenario in every panel (size first).
      const els = parseXml(fs.readFileSync(svg, 'utf8'));
      expect(els[0]!.name).toBe('svg');
      const bars = els.filter((e) => e.name === 'rect' && e.attrs.class === 'bar');
      const panels = ['size', ...ids];
      expect(bars).toHaveLength(panels.length * 5);
      for (const p of panels) expect(bars.filter((b) => b.attrs['data-metric'] === p).map((b) => b.attrs['data-scenario'])).toEqual(['none', 'commit', 'tree', 'both', 'auto']);
      for (const b of bars) expect(Number(b.attrs.width)).toBeGreaterThan(0);
      // The original is exactly as it was.
      expect(snapshot(repo)).toEqual(before);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('prints the seed-style table and removes its copies', () => {
    const repo = useFixtureCopy('multi-pack');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-test-'));
    try {
      const r = tool(['bench', '--runs=2', '--scenarios=both', '--commands=revs,objects-cg', `--tmpdir=${tmp}`, '--cold', '--min-time=0', '--clock=wall'], { cwd: repo });
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^git repack-ts bench: /);
      expect(r.stdout).toMatch(/git \d+\.\d+/);
      expect(r.stdout).toContain('| scenario | size | revs | objects +cg |');
      expect(r.stdout).toMatch(/\| both \| [\d.]+ MiB \(\+\d+%\) \| [\d.]+ s \([−+]?\d+%\) \|/);
      // Cold numbers are either measured with a checked eviction or said to be unavailable.
      expect(r.stdout).toMatch(/cold page cache(, wall-clock time \(the copy's files evicted|: unavailable)/);
      expect(fs.readdirSync(tmp)).toEqual([]);
      // Without a terminal, one line per finished step on stderr instead of silence.
      expect(r.stderr).toMatch(/^Building scenarios: 1\/2\nBuilding scenarios: 2\/2\n(?:Timing: \d+\/16\n)+$/);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('partial clones: rev-list --objects runs with --missing=allow-any', () => {
    const repo = useFixtureCopy('promisor');
    const r = tool(['bench', '--runs=1', '--json', '--scenarios=both', '--commands=objects,log', '--min-time=0', '--clock=wall'], { cwd: repo });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.promisor).toBe(true);
    expect(j.commands[0].args).toContain('--missing=allow-any');
    expect(j.scenarios[1].warm.objects.median).toBeGreaterThan(0);
  });

  it('reader experiments: delta base cache variants, lookup structures, zstd against zlib', () => {
    const repo = useFixtureCopy('basic');
    const r = tool(['bench', '--runs=1', '--json', '--scenarios=none', '--commands=revs', '--reader', '--reader-commits=30', '--min-time=0'], { cwd: repo });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    const rows = j.reader.cache.rows;
    expect(rows).toHaveLength(2 * 9 * 3);
    // Every variant walks the same objects; only the cache differs.
    for (const w of ['log-raw', 'log-S']) {
      const walks = rows.filter((x: { workload: string }) => x.workload === w).map((x: { walk: unknown }) => JSON.stringify(x.walk));
      expect(new Set(walks).size).toBe(1);
    }
    expect(rows.find((x: { workload: string }) => x.workload === 'log-raw').walk.trees).toBeGreaterThan(30);
    expect(j.reader.lookup.rows.map((x: { structure: string }) => x.structure)).toEqual(['open-addressing table (ours)', 'fanout + binary search (.idx)', 'Map keyed by hex', 'critbit tree']);
    const hits = new Set(j.reader.lookup.rows.map((x: { hits: number }) => x.hits));
    expect(hits.size).toBe(1);
    expect(j.reader.zstd).toMatchObject({ available: true, objects: Number(gitOk(['rev-list', '--objects', '--all', '--count'], { cwd: repo }).trim()) });
    expect(j.reader.zstd.zstdSeconds).toBeGreaterThan(0);
    expect(j.reader.zstd.zlibSeconds).toBeGreaterThan(0);
    // Without the native build the experiment says why instead of timing anything.
    const off = tool(['bench', '--runs=1', '--json', '--scenarios=none', '--commands=revs', '--reader=zstd', '--min-time=0'], { cwd: repo, env: { GIT_REPACK_TS_NO_ZSTD: '1' } });
    expect(JSON.parse(off.stdout).reader.zstd).toEqual({ available: false, reason: expect.stringContaining('zstd is not available') });
  });

  it.each([
    [['--scenarios=bogus'], /unknown scenario 'bogus'/],
    [['--runs=0'], /--runs expects a positive integer/],
    [['--runs=three'], /--runs expects a positive integer/],
    [['--commands=revs,nope'], /unknown value 'nope'/],
    [['--reader=cache,disk'], /unknown value 'disk'/],
    [['--frobnicate'], /unknown option/],
    [['--clock=sundial'], /--clock expects 'wall' or 'cpu'/],
    [['--min-time=soon'], /--min-time expects seconds/],
    [['--scenarios=auto:0:1.5'], /the ratio is a share of the size, at most 1/],
    [['--svg'], /option `svg' requires a value/],
    [['--no-svg'], /unknown option `no-svg'/],
  ])('usage error %j exits 129', (args, message) => {
    const repo = useFixtureCopy('basic');
    const r = tool(['bench', ...args], { cwd: repo });
    expect(r.status).toBe(129);
    expect(r.stderr).toMatch(message);
    // parse-options prints no usage after a missing value, as git does.
    if (!/requires a value/.test(r.stderr)) expect(r.stderr).toContain('usage: git repack-ts bench');
  });
});

describe('scenarios', () => {
  it('none first, duplicates dropped, auto rules parsed', () => {
    expect(parseScenarioList('both,commit,both').map((s) => s.name)).toEqual(['none', 'both', 'commit']);
    expect(parseScenario('both').levels).toEqual({ 1: 0, 2: 0, 3: -1, 4: -1 });
    expect(parseScenario('auto:512:0.9').autoRule).toEqual({ smallBytes: 512, maxRatio: 0.9 });
    expect(parseScenario('auto:1024').autoRule).toEqual({ smallBytes: 1024, maxRatio: Infinity });
    expect(parseScenario('auto:768:0.8+fixed@commit')).toMatchObject({ autoRule: { smallBytes: 768, maxRatio: 0.8, fixed: true }, levels: { 1: 'auto', 2: -1 } });
    expect(parseScenario('auto+fixed').autoRule).toEqual({ ...DEFAULT_AUTO_RULE, fixed: true });
    expect(parseScenario('auto:0:1').autoRule).toEqual({ smallBytes: 0, maxRatio: 1 });
    expect(() => parseScenario('auto:0:1.001')).toThrow(/at most 1/);
    expect(() => parseScenario('auto:x')).toThrow(/unknown scenario/);
  });
});

describe('the report against both', () => {
  const cell = (median: number, vsNone: number) => ({ median, runs: [median], wall: [median], cpu: [median], vsNone, spread: 0 });
  const scen = (name: string, packBytes: number, revs: number, log: number, logCg: number) => ({
    name,
    packBytes,
    description: '',
    reencoded: { commit: 0, tree: 0, blob: 0, tag: 0 },
    setupSeconds: 0,
    cold: {},
    warm: { revs: cell(revs, revs / 2 - 1), log: cell(log, log / 4 - 1), 'log-cg': cell(logCg, logCg / 4 - 1) },
  });
  const result = (scenarios: unknown[]) =>
    ({
      commands: [
        { id: 'revs', label: 'revs', commitGraph: false, args: ['rev-list'], repeat: 1 },
        { id: 'log', label: 'log', commitGraph: false, args: ['log'], repeat: 1 },
        { id: 'log-cg', label: 'log +cg', commitGraph: true, args: ['log'], repeat: 1 },
      ],
      scenarios,
    }) as unknown as BenchResult;

  it('gives each auto scenario its share of both\'s size increase and speed-ups, and says whether the target is met', () => {
    // none: 100 bytes, revs 2 s, log 4 s; both: +20 bytes, saves 1 s and 2 s.
    const r = result([scen('none', 100, 2, 4, 4), scen('both', 120, 1, 2, 2), scen('auto', 110, 1.2, 2.2, 3), scen('auto:9', 104, 1.1, 3.7, 4), scen('commit', 115, 1, 4, 4)]);
    const s = shareOfBoth(r);
    expect(s.map((x) => x.scenario)).toEqual(['auto', 'auto:9']);
    expect(s[0]!.size).toBeCloseTo(0.5, 12);
    expect(s[0]!.columns.revs).toBeCloseTo(0.8, 12);
    expect(s[0]!.columns.log).toBeCloseTo(0.9, 12);
    expect(s[0]!.columns['log +cg']).toBeCloseTo(0.5, 12);
    expect(s[0]!.walks).toBeCloseTo((0.8 + 1.8) / 3, 12); // the two walks without a commit-graph
    expect(s[1]!.walks).toBeCloseTo((0.9 + 0.3) / 3, 12);
    const text = formatReport({ ...r, repository: 'x', gitVersion: '2', objects: 1, promisor: false, runs: 1, clock: 'cpu', logN: 1, cold: { requested: false, available: false, reason: '' }, workDir: '', kept: false, seconds: 0 } as BenchResult);
    expect(text).toContain('auto: 50% of the size increase; of the speed-up: revs 80%, log 90%, log +cg 50%; walks 87% (met)');
    expect(text).toContain('auto:9: 20% of the size increase; of the speed-up: revs 90%, log 15%, log +cg 0%; walks 40% (not met)');
    // Only walks with a commit-graph: the columns, but no verdict.
    const cgOnly = { ...r, commands: r.commands.filter((c) => c.commitGraph) } as BenchResult;
    expect(shareOfBoth(cgOnly)[0]!.walks).toBeNaN();
    expect(formatReport({ ...cgOnly, repository: 'x', gitVersion: '2', objects: 1, promisor: false, runs: 1, clock: 'cpu', logN: 1, cold: { requested: false, available: false, reason: '' }, workDir: '', kept: false, seconds: 0 } as BenchResult)).toContain(
      'auto: 50% of the size increase; of the speed-up: log +cg 50%; walks – (not judged: no walk without a commit-graph timed)',
    );
    // Without a both scenario there is nothing to hold anything against.
    expect(shareOfBoth(result([scen('none', 100, 2, 4, 4), scen('auto', 110, 1.2, 2.2, 3)]))).toEqual([]);
  });
});

describe('the auto rule', () => {
  it.each(['basic', 'multi-pack', 'big-blob'] as const)('a second `repack --graph-compression=auto` re-encodes nothing (%s)', (name) => {
    const repo = useFixtureCopy(name);
    const run = () => {
      const r = tool(['--graph-compression=auto', '--no-fsck', '--json'], { cwd: repo });
      expect(r.status).toBe(0);
      return JSON.parse(r.stdout) as { partitions: { stats: { reencoded: Record<string, number> } }[] };
    };
    const first = run();
    expect(first.partitions.length).toBeGreaterThan(0);
    const second = run();
    for (const p of second.partitions) expect(p.stats.reencoded).toEqual({ commit: 0, tree: 0, blob: 0, tag: 0 });
  });

  it('a loose tree that deflate barely shrinks is stored at once, not one run later (fsck --strict, nothing lost)', () => {
    const repo = useFixtureCopy('basic');
    // 20 entries with names of random bytes from 0x80-0xff and distinct blobs: about 1.8 KB that
    // level 6 keeps at ~0.9 of its size. Loose, so `auto` has no packed length to judge.
    const rng = new Prng(11);
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) {
      const blob = gitOk(['hash-object', '-w', '--stdin'], { cwd: repo, input: `blob ${i}\n` }).trim();
      const name = Buffer.from(Array.from({ length: 60 }, () => 0x80 + (rng.u32() & 0x7f))).toString('latin1');
      lines.push(`100644 blob ${blob}\t${name}`);
    }
    const input = Buffer.from(lines.join('\0') + '\0', 'latin1');
    const tree = gitOk(['mktree', '-z'], { cwd: repo, input }).trim();
    const commit = gitOk(['commit-tree', tree, '-m', 'noisy tree'], { cwd: repo }).trim();
    gitOk(['update-ref', 'refs/heads/noisy', commit], { cwd: repo });
    const size = Number(gitOk(['cat-file', '-s', tree], { cwd: repo }).trim());
    const raw = gitOkBuffer(['cat-file', 'tree', tree], { cwd: repo });
    expect(size).toBeGreaterThanOrEqual(DEFAULT_AUTO_RULE.smallBytes);
    expect(deflateSync(raw).length).toBeGreaterThan(DEFAULT_AUTO_RULE.maxRatio * size);
    const before = objectSet(repo);
    const run = () => {
      const r = tool(['--graph-compression=auto', '--no-fsck', '--json'], { cwd: repo });
      expect(r.status).toBe(0);
      return JSON.parse(r.stdout) as { partitions: { stats: { reencoded: Record<string, number> } }[] };
    };
    run();
    // The tree's entry in the new pack: a stored zlib stream (FLEVEL 0, first block stored).
    const packs = fs.readdirSync(path.join(repo, '.git', 'objects', 'pack')).filter((f) => f.endsWith('.pack'));
    expect(packs).toHaveLength(1);
    const pack = path.join(repo, '.git', 'objects', 'pack', packs[0]!);
    const e = verifyPack(repo, pack).entries.find((x) => x.oid === tree)!;
    const bytes = fs.readFileSync(pack);
    let p = e.offset;
    while (bytes[p]! & 0x80) p++;
    p++;
    expect(firstBlockCode(bytes[p + 1]! >> 6, bytes[p + 2])).toBe(1);
    for (const part of run().partitions) expect(part.stats.reencoded).toEqual({ commit: 0, tree: 0, blob: 0, tag: 0 });
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('auto+fixed: git reads the pack it writes (fsck --strict, index-pack gives the same .idx), fixed codes in it, a second run copies all', () => {
    const repo = useFixtureCopy('basic');
    const before = objectSet(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-fixed-'));
    try {
      const r = tool(['bench', '--runs=1', '--json', '--scenarios=auto:0:0.8+fixed', '--commands=revs', '--keep', `--tmpdir=${tmp}`, '--min-time=0'], { cwd: repo });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const s = JSON.parse(r.stdout).scenarios[1];
      expect(s.name).toBe('auto:0:0.8+fixed');
      expect(s.rerunReencodes).toBe(0);
      expect(objectSet(s.copy)).toEqual(before);
      const f = fsckStrict(s.copy);
      expect(f.output).toBe('');
      expect(f.status).toBe(0);
      const packDir = path.join(s.copy, 'objects', 'pack');
      let fixed = 0;
      for (const name of fs.readdirSync(packDir).filter((n) => n.endsWith('.pack'))) {
        const pack = path.join(packDir, name);
        gitOk(['index-pack', '-o', path.join(tmp, 'g.idx'), pack], { cwd: s.copy });
        expect(fs.readFileSync(path.join(tmp, 'g.idx')).equals(fs.readFileSync(pack.slice(0, -5) + '.idx'))).toBe(true);
        fs.rmSync(path.join(tmp, 'g.idx'));
        // Commits and trees: FLEVEL 0 and a first block with fixed codes, unless stored.
        const bytes = fs.readFileSync(pack);
        for (const e of verifyPack(s.copy, pack).entries) {
          if (e.type !== 'commit' && e.type !== 'tree') continue;
          let p = e.offset;
          const kind = (bytes[p]! >> 4) & 7;
          while (bytes[p]! & 0x80) p++;
          p++;
          if (kind === 6) while (bytes[p++]! & 0x80); // OFS_DELTA distance
          if (kind === 7) p += 20; // REF_DELTA base id
          const code = firstBlockCode(bytes[p + 1]! >> 6, bytes[p + 2]);
          expect(bytes[p + 1]! >> 6).toBe(0);
          expect([1, 3]).toContain(code);
          if (code === 3) fixed++;
        }
      }
      expect(fixed).toBeGreaterThan(10);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

});

describe('delta base cache variants', () => {
  const obj = (type: number, n: number) => ({ type, data: Buffer.alloc(n) });

  it('single-lru evicts the least recently used entry, whatever its type', () => {
    const c = makeCache('single-lru', 2, 1 << 20);
    c.set(1, obj(OBJ_TREE, 10));
    c.set(2, obj(OBJ_BLOB, 10));
    c.get(1);
    c.set(3, obj(OBJ_TREE, 10));
    expect([c.get(1) !== undefined, c.get(2) !== undefined, c.get(3) !== undefined]).toEqual([true, false, true]);
  });

  it('two-lists and scan-blobs drop blobs first when over the byte cap', () => {
    for (const v of ['two-lists', 'scan-blobs'] as const) {
      const c = makeCache(v, 100, 25);
      c.set(1, obj(OBJ_TREE, 10));
      c.set(2, obj(OBJ_BLOB, 10));
      c.set(3, obj(OBJ_TREE, 10));
      expect([v, c.get(1) !== undefined, c.get(2) !== undefined, c.get(3) !== undefined]).toEqual([v, true, false, true]);
    }
  });

  it('the critbit tree finds what it holds and nothing else', () => {
    const ids = crypto.randomBytes(20 * 500);
    const t = new Critbit(ids, 20);
    for (let i = 0; i < 500; i++) t.insert(i);
    for (let i = 0; i < 500; i++) expect(t.find(ids, i * 20)).toBe(i);
    expect(t.find(crypto.randomBytes(20), 0)).toBe(-1);
  });
});
