import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { tool } from './helpers/tool.js';
import { fsckStrict, git, gitOk, gitOkBuffer, objectSet, verifyPack } from './helpers/git.js';
import { makeCache } from '../src/bench/base-cache.js';
import { parseScenario, parseScenarioList } from '../src/bench/scenarios.js';
import { Critbit } from '../src/bench/lookup.js';
import { DEFAULT_AUTO_RULE } from '../src/repack/encoding.js';
import { formatReport, shareOfBoth } from '../src/bench/report.js';
import { renderSvg } from '../src/bench/svg.js';
import {
  COMMAND_IDS,
  resolveCommandIds,
  USER_COMMAND_IDS,
  SEED_COMMAND_IDS,
} from '../src/bench/commands.js';
import { cellOf, type BenchResult } from '../src/commands/bench.js';
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
      else if (e.isFile())
        out.set(
          path.relative(dir, p),
          crypto.createHash('sha1').update(fs.readFileSync(p)).digest('hex') +
            ` ${fs.statSync(p).mode}`,
        );
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
    if (m[6] !== undefined)
      throw new Error(`bad markup at ${m.index}: ${body.slice(m.index, m.index + 40)}`);
    if (m[5] !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(m[5])) throw new Error(`bad entity in ${m[5]}`);
      if (stack.length === 0 && m[5].trim() !== '')
        throw new Error('text outside the root element');
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
      const r = tool(
        [
          'bench',
          '--runs=1',
          '--json',
          `--svg=${svg}`,
          '--keep',
          `--tmpdir=${tmp}`,
          '--log-n=50',
          '--min-time=0',
          '--clock=wall',
          '--commands=seed',
        ],
        { cwd: repo },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout);
      expect(j.scenarios.map((s: { name: string }) => s.name)).toEqual([
        'none',
        'commit',
        'tree',
        'both',
        'auto',
      ]);
      expect(j.commands.map((c: { id: string }) => c.id)).toEqual([
        'revs',
        'revs-cg',
        'objects',
        'objects-cg',
        'log',
        'log-cg',
      ]);
      expect(j.gitVersion).toMatch(/^\d+\.\d+/);
      expect(j.clock).toBe('wall');
      const ids = j.commands.map((c: { id: string }) => c.id);
      for (const s of j.scenarios) {
        // Sizes are those of the .pack files in the scenario's copy, and every object is in them.
        const packDir = path.join(s.copy, 'objects', 'pack');
        const onDisk = fs.readdirSync(packDir).filter((f) => f.endsWith('.pack'));
        expect(onDisk.length).toBe(s.packs.length);
        expect(s.packBytes).toBe(
          onDisk.reduce((a, f) => a + fs.statSync(path.join(packDir, f)).size, 0),
        );
        expect(s.packs.reduce((a: number, p: { objects: number }) => a + p.objects, 0)).toBe(
          j.objects,
        );
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
      expect(j.vsBoth[0].size).toBeCloseTo(
        (by.auto.packBytes - by.none.packBytes) / (by.both.packBytes - by.none.packBytes),
        12,
      );
      for (const id of ids) {
        const label = j.commands.find((c: { id: string }) => c.id === id).label;
        if (by.both.warm[id].vsNone < 0)
          expect(j.vsBoth[0].columns[label]).toBeCloseTo(
            by.auto.warm[id].vsNone / by.both.warm[id].vsNone,
            12,
          );
        else expect(j.vsBoth[0].columns[label]).toBeUndefined();
      }
      expect(j.cold.requested).toBe(false);
      // The chart: well-formed, one bar per scenario in every panel (size first).
      const els = parseXml(fs.readFileSync(svg, 'utf8'));
      expect(els[0]!.name).toBe('svg');
      const bars = els.filter((e) => e.name === 'rect' && e.attrs.class === 'bar');
      const panels = ['size', ...ids];
      expect(bars).toHaveLength(panels.length * 5);
      for (const p of panels)
        expect(
          bars.filter((b) => b.attrs['data-metric'] === p).map((b) => b.attrs['data-scenario']),
        ).toEqual(['none', 'commit', 'tree', 'both', 'auto']);
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
      const r = tool(
        [
          'bench',
          '--runs=2',
          '--scenarios=both',
          '--commands=revs,objects-cg',
          `--tmpdir=${tmp}`,
          '--cold',
          '--min-time=0',
          '--clock=wall',
        ],
        { cwd: repo },
      );
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^git repack-ts bench: /);
      expect(r.stdout).toMatch(/git \d+\.\d+/);
      expect(r.stdout).toContain('| scenario | size | revs | objects +cg |');
      expect(r.stdout).toMatch(/\| both \| [\d.]+ MiB \(\+\d+%\) \| [\d.]+ s \([−+]?\d+%\) \|/);
      // Cold numbers are either measured with a checked eviction or said to be unavailable.
      expect(r.stdout).toMatch(
        /cold page cache(, wall-clock time \(the copy's files evicted|: unavailable)/,
      );
      expect(fs.readdirSync(tmp)).toEqual([]);
      // Without a terminal, one line per finished step on stderr instead of silence.
      expect(r.stderr).toMatch(
        /^Building scenarios: 1\/2\nBuilding scenarios: 2\/2\n(?:Timing: \d+\/16\n)+$/,
      );
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('partial clones: rev-list --objects runs with --missing=allow-any', () => {
    const repo = useFixtureCopy('promisor');
    const r = tool(
      [
        'bench',
        '--runs=1',
        '--json',
        '--scenarios=both',
        '--commands=objects,log',
        '--min-time=0',
        '--clock=wall',
      ],
      { cwd: repo },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.promisor).toBe(true);
    expect(j.commands[0].args).toContain('--missing=allow-any');
    expect(j.scenarios[1].warm.objects.median).toBeGreaterThan(0);
  });

  it('reader experiments: delta base cache variants, lookup structures, zstd against zlib', () => {
    const repo = useFixtureCopy('basic');
    const r = tool(
      [
        'bench',
        '--runs=1',
        '--json',
        '--scenarios=none',
        '--commands=revs',
        '--reader',
        '--reader-commits=30',
        '--min-time=0',
      ],
      { cwd: repo },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    const rows = j.reader.cache.rows;
    expect(rows).toHaveLength(2 * 9 * 3);
    // Every variant walks the same objects; only the cache differs.
    for (const w of ['log-raw', 'log-S']) {
      const walks = rows
        .filter((x: { workload: string }) => x.workload === w)
        .map((x: { walk: unknown }) => JSON.stringify(x.walk));
      expect(new Set(walks).size).toBe(1);
    }
    expect(
      rows.find((x: { workload: string }) => x.workload === 'log-raw').walk.trees,
    ).toBeGreaterThan(30);
    expect(j.reader.lookup.rows.map((x: { structure: string }) => x.structure)).toEqual([
      'open-addressing table (ours)',
      'fanout + binary search (.idx)',
      'Map keyed by hex',
      'critbit tree',
    ]);
    const hits = new Set(j.reader.lookup.rows.map((x: { hits: number }) => x.hits));
    expect(hits.size).toBe(1);
    expect(j.reader.zstd).toMatchObject({
      available: true,
      objects: Number(gitOk(['rev-list', '--objects', '--all', '--count'], { cwd: repo }).trim()),
    });
    expect(j.reader.zstd.zstdSeconds).toBeGreaterThan(0);
    expect(j.reader.zstd.zlibSeconds).toBeGreaterThan(0);
    // Without the native build the experiment says why instead of timing anything.
    const off = tool(
      [
        'bench',
        '--runs=1',
        '--json',
        '--scenarios=none',
        '--commands=revs',
        '--reader=zstd',
        '--min-time=0',
      ],
      { cwd: repo, env: { GIT_REPACK_TS_NO_ZSTD: '1' } },
    );
    expect(JSON.parse(off.stdout).reader.zstd).toEqual({
      available: false,
      reason: expect.stringContaining('zstd is not available'),
    });
  });

  it.each([
    [['--scenarios=bogus'], /unknown scenario 'bogus'/],
    [['--runs=0'], /--runs expects a positive integer/],
    [['--runs=three'], /--runs expects a positive integer/],
    [['--commands=revs,nope'], /unknown value 'nope'/],
    [['--commands=revs-bloom'], /unknown value 'revs-bloom'/],
    [['--commands=subjects-cg'], /unknown value 'subjects-cg'/],
    [['--paths=a,b,c'], /--paths expects one or two files/],
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
    if (!/requires a value/.test(r.stderr))
      expect(r.stderr).toContain('usage: git repack-ts bench');
  });
});

/** The chunk ids of a commit-graph file (gitformat-commit-graph: header, then the table of contents). */
function commitGraphChunks(file: string): string[] {
  const b = fs.readFileSync(file);
  expect(b.subarray(0, 4).toString('latin1')).toBe('CGPH');
  const ids: string[] = [];
  for (let i = 0; i < b[6]!; i++) ids.push(b.subarray(8 + 12 * i, 12 + 12 * i).toString('latin1'));
  return ids;
}

/** git's trace2 events for one run of `args` in `gitDir` (the bench's own check is not trusted here). */
function trace2(
  gitDir: string,
  args: string[],
): {
  status: number;
  stderr: string;
  events: { event: string; category?: string; key?: string; value?: unknown }[];
} {
  const file = path.join(os.tmpdir(), `rts-trace2-${process.pid}-${Date.now()}.json`);
  try {
    const r = git([`--git-dir=${gitDir}`, ...args], { env: { GIT_TRACE2_EVENT: file } });
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    return {
      status: r.status,
      stderr: r.stderr,
      events: text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l)),
    };
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** The files at HEAD that `git rev-list --full-history` (not the bench's name-only scan) says the most commits change. */
function mostChanged(repo: string, files: string[]): { path: string; n: number } {
  const counted = files.map((f) => ({
    path: f,
    n: Number(
      gitOk(['rev-list', '--count', '--no-merges', '--full-history', 'HEAD', '--', f], {
        cwd: repo,
      }).trim(),
    ),
  }));
  counted.sort((a, b) => b.n - a.n || Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return counted[0]!;
}

describe('the commands users run (issue 32)', () => {
  it('every user column timed on a fixture; paths chosen as git counts them; the +bloom state reads Bloom filters and the other none', () => {
    const repo = useFixtureCopy('basic');
    const before = snapshot(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-test-'));
    try {
      const svgFile = path.join(tmp, 'chart.svg');
      const r = tool(
        [
          'bench',
          '--runs=1',
          '--json',
          '--keep',
          `--tmpdir=${tmp}`,
          `--svg=${svgFile}`,
          '--min-time=0',
          '--clock=wall',
          '--scenarios=both',
        ],
        { cwd: repo },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout) as BenchResult;
      // The default is the user preset, every column of it.
      expect(j.commands.map((c) => c.id)).toEqual([...USER_COMMAND_IDS]);
      expect(j.skipped).toEqual([]);
      for (const s of j.scenarios)
        for (const c of j.commands) expect(s.warm[c.id]!.median).toBeGreaterThan(0);
      // The paths: the most changed file at the root and below it, as rev-list counts them.
      const files = gitOk(['ls-tree', '-r', '--name-only', 'HEAD'], { cwd: repo })
        .split('\n')
        .filter((f) => f !== '' && fs.lstatSync(path.join(repo, f)).isFile());
      const root = mostChanged(
        repo,
        files.filter((f) => !f.includes('/')),
      );
      const below = mostChanged(
        repo,
        files.filter((f) => f.includes('/')),
      );
      expect(j.paths).toMatchObject({
        source: 'repository',
        oneline: root.path,
        log: below.path,
        blame: root.path,
        changes: { [root.path]: root.n, [below.path]: below.n },
      });
      expect(j.paths!.commitsScanned).toBe(
        Number(gitOk(['rev-list', '--count', 'HEAD'], { cwd: repo }).trim()),
      );
      const none = j.scenarios[0]!.copy!;
      // After the timed writes the copies hold a commit-graph with changed-path Bloom filters, that git verifies.
      for (const s of j.scenarios) {
        expect(commitGraphChunks(path.join(s.copy!, 'objects', 'info', 'commit-graph'))).toEqual(
          expect.arrayContaining(['BIDX', 'BDAT']),
        );
        gitOk([`--git-dir=${s.copy}`, 'commit-graph', 'verify']);
      }
      // Every printed command line runs as git; the +bloom ones read the filters (trace2), the others none.
      for (const c of j.commands.filter((x) => x.id !== 'cg-write')) {
        expect(c.line.startsWith('git ')).toBe(true);
        const t = trace2(none, c.line.split(' ').slice(1));
        expect([c.id, t.status, t.stderr]).toEqual([c.id, 0, '']);
        const stats = t.events.find((e) => e.category === 'bloom' && e.key === 'statistics')
          ?.value as Record<string, number> | undefined;
        const blameQueries = t.events.find(
          (e) => e.category === 'blame' && e.key === 'bloom/queries',
        )?.value;
        const reads =
          (stats !== undefined && stats.definitely_not! + stats.maybe! > 0) ||
          Number(blameQueries ?? 0) > 0;
        const pathLimited = c.id.startsWith('path-') || c.id.startsWith('blame');
        expect([c.id, reads]).toEqual([c.id, pathLimited && c.state === 'bloom']);
        // The bench's own account of the filters is git's.
        const own = j.bloom.find((b) => b.scenario === 'none' && b.line === c.line);
        if (own !== undefined && stats !== undefined)
          expect(own).toMatchObject({
            definitelyNot: stats.definitely_not,
            maybe: stats.maybe,
            filterNotPresent: stats.filter_not_present,
          });
        if (own !== undefined && blameQueries !== undefined)
          expect(own.blameQueries).toBe(Number(blameQueries));
      }
      expect(j.bloom.map((b) => `${b.scenario}: ${b.line}`)).toEqual([
        `none: git -c core.commitGraph=true -c commitGraph.readChangedPaths=true log --oneline -- ${root.path}`,
        `none: git -c core.commitGraph=true -c commitGraph.readChangedPaths=true blame HEAD -- ${root.path}`,
        `both: git -c core.commitGraph=true -c commitGraph.readChangedPaths=true log --oneline -- ${root.path}`,
      ]);
      // The report and the chart say what each scenario and each state means.
      const text = formatReport(j);
      for (const s of j.scenarios) expect(text).toContain(`  ${s.name} = ${s.description}`);
      expect(text).toContain('  +bloom = with a commit-graph holding changed-path Bloom filters');
      expect(text).toContain('  no graph (no mark) = no commit-graph (-c core.commitGraph=false)');
      expect(text).toContain(`| git log --oneline -- ${root.path} | +bloom | `);
      expect(text).toContain(`paths: ${root.path} (changed by ${root.n} of the`);
      const els = parseXml(fs.readFileSync(svgFile, 'utf8'));
      const swatches = els.filter((e) => e.name === 'rect' && e.attrs.class === 'legend-swatch');
      expect(swatches.map((e) => e.attrs['data-scenario'])).toEqual(['none', 'both']);
      const bars = els.filter((e) => e.name === 'rect' && e.attrs.class === 'bar');
      for (const sw of swatches)
        for (const b of bars.filter((x) => x.attrs['data-scenario'] === sw.attrs['data-scenario']))
          expect(b.attrs.fill).toBe(sw.attrs.fill);
      expect(bars).toHaveLength(2 * (1 + j.commands.length));
      const svgText = fs.readFileSync(svgFile, 'utf8');
      expect(svgText).toContain('+bloom = with a commit-graph holding changed-path Bloom');
      expect(svgText).toContain('none = the pack as git writes it');
      expect(snapshot(repo)).toEqual(before);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('partial clone without blobs: blame and log -p set aside with the reason (git itself cannot run them there), nothing fetched', () => {
    const repo = useFixtureCopy('promisor');
    // The fixture holds no blob at all (git's own census), so every blob those commands read is missing.
    expect(
      gitOk(['cat-file', '--batch-all-objects', '--batch-check=%(objecttype)'], { cwd: repo }),
    ).not.toMatch(/blob/);
    const before = snapshot(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-test-'));
    try {
      const r = tool(
        [
          'bench',
          '--runs=1',
          '--keep',
          `--tmpdir=${tmp}`,
          '--min-time=0',
          '--clock=wall',
          '--scenarios=both',
          '--commands=user',
          '--json',
        ],
        { cwd: repo },
      );
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout) as BenchResult;
      expect(j.skipped.map((s) => s.id)).toEqual(['blame', 'blame-bloom', 'log-p', 'log-p-bloom']);
      const logP = j.skipped.find((s) => s.id === 'log-p')!;
      const m =
        /^(\d+) of the (\d+) blobs it reads are not in the repository \(a partial clone\)/.exec(
          logP.reason,
        );
      expect(m).not.toBeNull();
      expect(Number(m![1])).toBe(Number(m![2]));
      expect(Number(m![1])).toBeGreaterThan(0);
      expect(j.skipped.find((s) => s.id === 'blame')!.reason).toMatch(
        /^none of the \d+ most changed files has all its versions \(.*: \d+ of the \d+ blobs it reads are not in the repository/,
      );
      // git agrees: in the copy (no remote, so no lazy fetch) both commands fail for want of a blob.
      const none = j.scenarios[0]!.copy!;
      const logPRun = git([`--git-dir=${none}`, ...logP.line.split(' ').slice(1)]);
      expect(logPRun.status).toBe(128);
      expect(logPRun.stderr).toMatch(/unable to read [0-9a-f]{40}/);
      // blame of a file that HEAD names (ls-tree) but whose blob is not there (cat-file -e) fails.
      const p1 = j.paths!.oneline!;
      const entry = gitOk([`--git-dir=${none}`, 'ls-tree', 'HEAD', '--', p1]);
      expect(entry).toMatch(new RegExp(`^100644 blob [0-9a-f]{40}\t${p1}\n$`));
      expect(git([`--git-dir=${none}`, 'cat-file', '-e', entry.split(/\s/)[2]!]).status).not.toBe(
        0,
      );
      expect(git([`--git-dir=${none}`, 'blame', 'HEAD', '--', p1]).status).toBe(128);
      // Everything else was timed.
      expect(j.commands.map((c) => c.id)).toEqual(
        USER_COMMAND_IDS.filter((id) => !id.startsWith('blame') && !id.startsWith('log-p')),
      );
      for (const c of j.commands) expect(j.scenarios[1]!.warm[c.id]!.median).toBeGreaterThan(0);
      expect(formatReport(j)).toContain(
        `not timed:\n  ${j.skipped[0]!.line}: ${j.skipped[0]!.reason}`,
      );
      expect(renderSvg(j)).toContain('not timed:');
      expect(snapshot(repo)).toEqual(before);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('--paths names the files; a file not in HEAD is refused', () => {
    const repo = useFixtureCopy('basic');
    const r = tool(
      [
        'bench',
        '--runs=1',
        '--json',
        '--scenarios=none',
        '--commands=path-oneline,path-log-bloom,blame',
        '--paths=src/lib/util.c,README.md',
        '--min-time=0',
      ],
      { cwd: repo },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout) as BenchResult;
    expect(j.commands.map((c) => c.line)).toEqual([
      'git -c core.commitGraph=false log --oneline -- src/lib/util.c',
      'git -c core.commitGraph=true -c commitGraph.readChangedPaths=true log -- README.md',
      'git -c core.commitGraph=false blame HEAD -- src/lib/util.c',
    ]);
    expect(j.paths).toMatchObject({
      source: 'option',
      oneline: 'src/lib/util.c',
      log: 'README.md',
      blame: 'src/lib/util.c',
    });
    const bad = tool(
      [
        'bench',
        '--runs=1',
        '--scenarios=none',
        '--commands=path-log',
        '--paths=no-such-file',
        '--min-time=0',
      ],
      { cwd: repo },
    );
    expect(bad.status).toBe(129);
    expect(bad.stderr).toBe("error: --paths: 'no-such-file' is not a file in HEAD\n");
  });

  it('presets expand to their columns; ids are checked', () => {
    expect(resolveCommandIds(undefined)).toEqual([...USER_COMMAND_IDS]);
    expect(resolveCommandIds('seed')).toEqual([...SEED_COMMAND_IDS]);
    expect(resolveCommandIds('all')).toEqual([...COMMAND_IDS]);
    expect(resolveCommandIds('revs,seed,count-bloom')).toEqual([
      ...SEED_COMMAND_IDS,
      'count-bloom',
    ]);
    expect(() => resolveCommandIds('blame-cg')).toThrow(/unknown value 'blame-cg'/);
  });
});

describe('--min-time=0 (issue 34): no Infinity or NaN', () => {
  const run = (wall: number, cpu: number) => ({ wall, cpu });

  it('a base of 0 s gives n/a in the cell, the table, the chart and the JSON', () => {
    expect(cellOf([run(0.02, 0.01)], [run(0.01, 0)], 'cpu').vsNone).toBeNull();
    expect(cellOf([run(0.02, 0)], [run(0.01, 0)], 'cpu').vsNone).toBeNull();
    expect(
      cellOf([run(0.02, 0.02), run(0.02, 0.03)], [run(0.01, 0.01), run(0.01, 0)], 'cpu').vsNone,
    ).toBeNull();
    expect(
      cellOf([run(0.03, 0.02), run(0.03, 0.03)], [run(0.01, 0.01), run(0.01, 0.01)], 'wall').vsNone,
    ).toBeCloseTo(2, 12);
    expect(cellOf([run(0.03, NaN)], undefined, 'wall').cpu).toEqual([null]);
  });

  it('an end-to-end run with CPU time in 10 ms ticks: table, chart and JSON', () => {
    const repo = useFixtureCopy('basic');
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-test-'));
    try {
      const args = [
        'bench',
        '--runs=3',
        '--min-time=0',
        '--clock=cpu',
        '--scenarios=both',
        '--commands=revs,revs-cg,count-bloom,path-log-bloom',
      ];
      const j = tool([...args, '--json', `--svg=${path.join(tmp, 'a.svg')}`], { cwd: repo });
      const t = tool([...args, `--svg=${path.join(tmp, 'b.svg')}`], { cwd: repo });
      expect([j.status, t.status]).toEqual([0, 0]);
      for (const text of [
        j.stdout,
        t.stdout,
        fs.readFileSync(path.join(tmp, 'a.svg'), 'utf8'),
        fs.readFileSync(path.join(tmp, 'b.svg'), 'utf8'),
      ])
        expect(text).not.toMatch(/Infinity|NaN/);
      // vsNone is n/a exactly where none measured 0 s in a round, else the median of the same-round ratios.
      const r = JSON.parse(j.stdout) as BenchResult;
      const [none, both] = r.scenarios;
      for (const c of r.commands) {
        const base = none!.warm[c.id]!.runs;
        const mine = both!.warm[c.id]!;
        if (base.some((x) => x === 0)) expect(mine.vsNone).toBeNull();
        else {
          const ratios = mine.runs.map((x, k) => x / base[k]!).sort((a, b) => a - b);
          expect(mine.vsNone).toBeCloseTo(ratios[1]! - 1, 12);
        }
      }
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('a result whose none took 0 s everywhere reads n/a, never +Infinity% or −NaN%', () => {
    const zero = { median: 0, runs: [0], wall: [0.003], cpu: [0], vsNone: 0, spread: 0 };
    const some = {
      median: 0.01,
      runs: [0.01],
      wall: [0.004],
      cpu: [0.01],
      vsNone: null,
      spread: 0,
    };
    const scen = (name: string, cell: typeof zero | typeof some) => ({
      name,
      description: `${name} described`,
      packBytes: 100,
      commitGraphBytes: 0,
      reencoded: { commit: 0, tree: 0, blob: 0, tag: 0 },
      setupSeconds: 0,
      warm: { revs: cell, count: cell },
      cold: {},
    });
    const r = {
      repository: 'x',
      gitVersion: '2',
      objects: 1,
      promisor: false,
      runs: 1,
      clock: 'cpu',
      logN: 1,
      workDir: '',
      kept: false,
      seconds: 0,
      commands: [
        {
          id: 'revs',
          label: 'revs',
          commitGraph: false,
          state: 'off',
          group: 'seed',
          args: ['rev-list', '--count', '--all'],
          needsBlobs: false,
          line: 'git rev-list',
          repeat: 1,
        },
        {
          id: 'count',
          label: 'rev-list --count --all',
          commitGraph: false,
          state: 'off',
          group: 'user',
          args: ['rev-list', '--count', '--all'],
          needsBlobs: false,
          line: 'git rev-list',
          repeat: 1,
        },
      ],
      skipped: [],
      states: { off: 'no graph' },
      bloom: [],
      cold: { requested: false, available: false, reason: '' },
      scenarios: [scen('none', zero), scen('both', some)],
    } as unknown as BenchResult;
    const text = formatReport(r);
    expect(text).toContain('| both | 0.0 MiB (0%) | 0.010 s (n/a) |');
    expect(text).toContain('| git rev-list --count --all | no graph | 0.000 s | 0.010 s (n/a) |');
    const svg = renderSvg(r);
    expect(svg).toContain('0.010 s n/a');
    for (const out of [text, svg, JSON.stringify(r)]) expect(out).not.toMatch(/Infinity|NaN/);
  });
});

describe('reports of older --json files', () => {
  it('a result written before issue 32 (no states, groups or skipped columns) still prints its seed table and chart', () => {
    const cell = (median: number, vsNone: number) => ({
      median,
      runs: [median],
      wall: [median],
      cpu: [median],
      vsNone,
      spread: 0,
    });
    const scen = (name: string, revs: number) => ({
      name,
      description: `${name} described`,
      packBytes: 100,
      commitGraphBytes: 10,
      reencoded: { commit: 0, tree: 0, blob: 0, tag: 0 },
      setupSeconds: 1,
      warm: { revs: cell(revs, revs - 1), 'revs-cg': cell(0.5, 0) },
      cold: {},
    });
    const old = {
      repository: 'x',
      gitVersion: '2.39.5',
      objects: 1,
      promisor: false,
      runs: 1,
      clock: 'cpu',
      logN: 1,
      workDir: '',
      kept: false,
      seconds: 0,
      commands: [
        {
          id: 'revs',
          label: 'revs',
          commitGraph: false,
          args: ['rev-list', '--count', '--all'],
          line: 'git -c core.commitGraph=false rev-list --count --all',
          repeat: 1,
        },
        {
          id: 'revs-cg',
          label: 'revs +cg',
          commitGraph: true,
          args: ['rev-list', '--count', '--all'],
          line: 'git -c core.commitGraph=true rev-list --count --all',
          repeat: 1,
        },
      ],
      cold: { requested: false, available: false, reason: '' },
      scenarios: [scen('none', 1), scen('both', 0.25)],
    } as unknown as BenchResult;
    const text = formatReport(old);
    expect(text).toContain('| scenario | size | revs | revs +cg |');
    expect(text).toContain('| both | 0.0 MiB (0%) | 0.250 s (−75%) | 0.500 s (0%) |');
    expect(text).toContain('  +cg = with a commit-graph without Bloom filters');
    const bars = parseXml(renderSvg(old)).filter(
      (e) => e.name === 'rect' && e.attrs.class === 'bar',
    );
    expect(bars.map((b) => b.attrs['data-metric'])).toEqual([
      'size',
      'size',
      'revs',
      'revs',
      'revs-cg',
      'revs-cg',
    ]);
  });
});

describe('scenarios', () => {
  it('none first, duplicates dropped, auto rules parsed', () => {
    expect(parseScenarioList('both,commit,both').map((s) => s.name)).toEqual([
      'none',
      'both',
      'commit',
    ]);
    expect(parseScenario('both').levels).toEqual({ 1: 0, 2: 0, 3: -1, 4: -1 });
    expect(parseScenario('auto:512:0.9').autoRule).toEqual({ smallBytes: 512, maxRatio: 0.9 });
    expect(parseScenario('auto:1024').autoRule).toEqual({ smallBytes: 1024, maxRatio: Infinity });
    expect(parseScenario('auto:768:0.8+fixed@commit')).toMatchObject({
      autoRule: { smallBytes: 768, maxRatio: 0.8, fixed: true },
      levels: { 1: 'auto', 2: -1 },
    });
    expect(parseScenario('auto+fixed').autoRule).toEqual({ ...DEFAULT_AUTO_RULE, fixed: true });
    expect(parseScenario('auto:0:1').autoRule).toEqual({ smallBytes: 0, maxRatio: 1 });
    expect(() => parseScenario('auto:0:1.001')).toThrow(/at most 1/);
    expect(() => parseScenario('auto:x')).toThrow(/unknown scenario/);
  });
});

describe('the report against both', () => {
  const cell = (median: number, vsNone: number) => ({
    median,
    runs: [median],
    wall: [median],
    cpu: [median],
    vsNone,
    spread: 0,
  });
  const scen = (name: string, packBytes: number, revs: number, log: number, logCg: number) => ({
    name,
    packBytes,
    description: '',
    reencoded: { commit: 0, tree: 0, blob: 0, tag: 0 },
    setupSeconds: 0,
    cold: {},
    warm: {
      revs: cell(revs, revs / 2 - 1),
      log: cell(log, log / 4 - 1),
      'log-cg': cell(logCg, logCg / 4 - 1),
    },
  });
  const result = (scenarios: unknown[]) =>
    ({
      commands: [
        {
          id: 'revs',
          label: 'revs',
          commitGraph: false,
          state: 'off',
          group: 'seed',
          args: ['rev-list'],
          repeat: 1,
        },
        {
          id: 'log',
          label: 'log',
          commitGraph: false,
          state: 'off',
          group: 'seed',
          args: ['log'],
          repeat: 1,
        },
        {
          id: 'log-cg',
          label: 'log +cg',
          commitGraph: true,
          state: 'cg',
          group: 'seed',
          args: ['log'],
          repeat: 1,
        },
      ],
      skipped: [],
      states: {},
      bloom: [],
      scenarios,
    }) as unknown as BenchResult;

  it("gives each auto scenario its share of both's size increase and speed-ups, and says whether the target is met", () => {
    // none: 100 bytes, revs 2 s, log 4 s; both: +20 bytes, saves 1 s and 2 s.
    const r = result([
      scen('none', 100, 2, 4, 4),
      scen('both', 120, 1, 2, 2),
      scen('auto', 110, 1.2, 2.2, 3),
      scen('auto:9', 104, 1.1, 3.7, 4),
      scen('commit', 115, 1, 4, 4),
    ]);
    const s = shareOfBoth(r);
    expect(s.map((x) => x.scenario)).toEqual(['auto', 'auto:9']);
    expect(s[0]!.size).toBeCloseTo(0.5, 12);
    expect(s[0]!.columns.revs).toBeCloseTo(0.8, 12);
    expect(s[0]!.columns.log).toBeCloseTo(0.9, 12);
    expect(s[0]!.columns['log +cg']).toBeCloseTo(0.5, 12);
    expect(s[0]!.walks).toBeCloseTo((0.8 + 1.8) / 3, 12); // the two walks without a commit-graph
    expect(s[1]!.walks).toBeCloseTo((0.9 + 0.3) / 3, 12);
    const text = formatReport({
      ...r,
      repository: 'x',
      gitVersion: '2',
      objects: 1,
      promisor: false,
      runs: 1,
      clock: 'cpu',
      logN: 1,
      cold: { requested: false, available: false, reason: '' },
      workDir: '',
      kept: false,
      seconds: 0,
    } as BenchResult);
    expect(text).toContain(
      'auto: 50% of the size increase; of the speed-up: revs 80%, log 90%, log +cg 50%; walks 87% (met)',
    );
    expect(text).toContain(
      'auto:9: 20% of the size increase; of the speed-up: revs 90%, log 15%, log +cg 0%; walks 40% (not met)',
    );
    // Only walks with a commit-graph: the columns, but no verdict.
    const cgOnly = { ...r, commands: r.commands.filter((c) => c.commitGraph) } as BenchResult;
    expect(shareOfBoth(cgOnly)[0]!.walks).toBeNull();
    expect(
      formatReport({
        ...cgOnly,
        repository: 'x',
        gitVersion: '2',
        objects: 1,
        promisor: false,
        runs: 1,
        clock: 'cpu',
        logN: 1,
        cold: { requested: false, available: false, reason: '' },
        workDir: '',
        kept: false,
        seconds: 0,
      } as BenchResult),
    ).toContain(
      'auto: 50% of the size increase; of the speed-up: log +cg 50%; walks – (not judged: no walk without a commit-graph timed)',
    );
    // Without a both scenario there is nothing to hold anything against.
    expect(
      shareOfBoth(result([scen('none', 100, 2, 4, 4), scen('auto', 110, 1.2, 2.2, 3)])),
    ).toEqual([]);
  });
});

describe('the auto rule', () => {
  it.each(['basic', 'multi-pack', 'big-blob'] as const)(
    'a second `repack --graph-compression=auto` re-encodes nothing (%s)',
    (name) => {
      const repo = useFixtureCopy(name);
      const run = () => {
        const r = tool(['--graph-compression=auto', '--no-fsck', '--json'], { cwd: repo });
        expect(r.status).toBe(0);
        return JSON.parse(r.stdout) as {
          partitions: { stats: { reencoded: Record<string, number> } }[];
        };
      };
      const first = run();
      expect(first.partitions.length).toBeGreaterThan(0);
      const second = run();
      for (const p of second.partitions)
        expect(p.stats.reencoded).toEqual({ commit: 0, tree: 0, blob: 0, tag: 0 });
    },
  );

  it('a loose tree that deflate barely shrinks is stored at once, not one run later (fsck --strict, nothing lost)', () => {
    const repo = useFixtureCopy('basic');
    // 20 entries with names of random bytes from 0x80-0xff and distinct blobs: about 1.8 KB that
    // level 6 keeps at ~0.9 of its size. Loose, so `auto` has no packed length to judge.
    const rng = new Prng(11);
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) {
      const blob = gitOk(['hash-object', '-w', '--stdin'], {
        cwd: repo,
        input: `blob ${i}\n`,
      }).trim();
      const name = Buffer.from(
        Array.from({ length: 60 }, () => 0x80 + (rng.u32() & 0x7f)),
      ).toString('latin1');
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
      return JSON.parse(r.stdout) as {
        partitions: { stats: { reencoded: Record<string, number> } }[];
      };
    };
    run();
    // The tree's entry in the new pack: a stored zlib stream (FLEVEL 0, first block stored).
    const packs = fs
      .readdirSync(path.join(repo, '.git', 'objects', 'pack'))
      .filter((f) => f.endsWith('.pack'));
    expect(packs).toHaveLength(1);
    const pack = path.join(repo, '.git', 'objects', 'pack', packs[0]!);
    const e = verifyPack(repo, pack).entries.find((x) => x.oid === tree)!;
    const bytes = fs.readFileSync(pack);
    let p = e.offset;
    while (bytes[p]! & 0x80) p++;
    p++;
    expect(firstBlockCode(bytes[p + 1]! >> 6, bytes[p + 2])).toBe(1);
    for (const part of run().partitions)
      expect(part.stats.reencoded).toEqual({ commit: 0, tree: 0, blob: 0, tag: 0 });
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
  });

  it('auto+fixed: git reads the pack it writes (fsck --strict, index-pack gives the same .idx), fixed codes in it, a second run copies all', () => {
    const repo = useFixtureCopy('basic');
    const before = objectSet(repo);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bench-fixed-'));
    try {
      const r = tool(
        [
          'bench',
          '--runs=1',
          '--json',
          '--scenarios=auto:0:0.8+fixed',
          '--commands=revs',
          '--keep',
          `--tmpdir=${tmp}`,
          '--min-time=0',
        ],
        { cwd: repo },
      );
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
        expect(
          fs
            .readFileSync(path.join(tmp, 'g.idx'))
            .equals(fs.readFileSync(pack.slice(0, -5) + '.idx')),
        ).toBe(true);
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
    expect([c.get(1) !== undefined, c.get(2) !== undefined, c.get(3) !== undefined]).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('two-lists and scan-blobs drop blobs first when over the byte cap', () => {
    for (const v of ['two-lists', 'scan-blobs'] as const) {
      const c = makeCache(v, 100, 25);
      c.set(1, obj(OBJ_TREE, 10));
      c.set(2, obj(OBJ_BLOB, 10));
      c.set(3, obj(OBJ_TREE, 10));
      expect([v, c.get(1) !== undefined, c.get(2) !== undefined, c.get(3) !== undefined]).toEqual([
        v,
        true,
        false,
        true,
      ]);
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
