import type { BenchCommand, BenchResult, Cell, CommitGraphState, ScenarioResult } from './types.js';
import { STATE_MARK, STATE_TEXT } from './commands.js';

/**
 * A result as `--json` of a build before issue 32 wrote it (commands without group or state; no
 * skipped, states or bloom) made whole, so that its report can still be printed: every column
 * was then one of the seed's, `+cg` the commit-graph state.
 */
export function upgradeResult(r: BenchResult): BenchResult {
  const commands = r.commands.map((c) => ({
    ...c,
    state: c.state ?? (c.commitGraph ? 'cg' : 'off'),
    group: c.group ?? 'seed',
    needsBlobs: c.needsBlobs ?? false,
  }));
  const states: BenchResult['states'] = {};
  for (const c of commands) states[c.state] = STATE_TEXT[c.state];
  return {
    ...r,
    commands,
    skipped: r.skipped ?? [],
    states: r.states ?? states,
    bloom: r.bloom ?? [],
  };
}
import { CACHE_VARIANTS } from './base-cache.js';

export function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

export function seconds(s: number): string {
  if (!Number.isFinite(s)) return '–';
  if (s >= 10) return `${s.toFixed(1)} s`;
  if (s >= 1) return `${s.toFixed(2)} s`;
  return `${s.toFixed(3)} s`;
}

/** A signed percentage with a real minus sign, like the seed's tables; `n/a` where there is no ratio. */
export function pct(ratio: number | null | undefined): string {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return 'n/a';
  const v = Math.round(ratio * 100);
  if (v === 0) return '0%';
  return `${v > 0 ? '+' : '−'}${Math.abs(v)}%`;
}

/** a / b − 1, or null where b is not a positive number (nothing to compare with). */
export function change(a: number, b: number): number | null {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b - 1 : null;
}

function cellText(c: Cell | undefined, isNone: boolean): string {
  if (c === undefined) return '–';
  return isNone ? seconds(c.median) : `${seconds(c.median)} (${pct(c.vsNone)})`;
}

function sizeText(s: ScenarioResult, none: ScenarioResult): string {
  if (s === none) return mib(s.packBytes);
  return `${mib(s.packBytes)} (${pct(change(s.packBytes, none.packBytes))})`;
}

type Pick = (s: ScenarioResult) => Record<string, Cell>;

/** The seed's table: a row per scenario, a column per walk. */
function table(
  r: BenchResult,
  commands: BenchResult['commands'],
  pick: Pick,
  withSize: boolean,
): string[] {
  const none = r.scenarios[0]!;
  const head = ['scenario', ...(withSize ? ['size'] : []), ...commands.map((c) => c.label)];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  for (const s of r.scenarios) {
    const row = [
      s.name,
      ...(withSize ? [sizeText(s, none)] : []),
      ...commands.map((c) => cellText(pick(s)[c.id], s === none)),
    ];
    lines.push(`| ${row.join(' | ')} |`);
  }
  return lines;
}

/** The state column of the user table. */
export const STATE_NAME: Record<CommitGraphState, string> = {
  off: 'no graph',
  cg: '+cg',
  bloom: '+bloom',
  write: 'from scratch',
};

/** A column's command without its state mark (`log -- Makefile +bloom` → `log -- Makefile`). */
export function commandName(c: BenchCommand): string {
  const mark = STATE_MARK[c.state];
  return mark !== '' && c.label.endsWith(mark) ? c.label.slice(0, -mark.length) : c.label;
}

/** The user table: a row per command and state, a column per scenario (many commands, few scenarios). */
function userTable(
  r: BenchResult,
  commands: BenchResult['commands'],
  pick: Pick,
  withSize: boolean,
): string[] {
  const none = r.scenarios[0]!;
  const head = ['command', 'state', ...r.scenarios.map((s) => s.name)];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  if (withSize)
    lines.push(
      `| size (.pack files) | | ${r.scenarios.map((s) => sizeText(s, none)).join(' | ')} |`,
    );
  for (const c of commands)
    lines.push(
      `| git ${commandName(c)} | ${STATE_NAME[c.state]} | ${r.scenarios.map((s) => cellText(pick(s)[c.id], s === none)).join(' | ')} |`,
    );
  return lines;
}

/** What each scenario and each state means, the paths, and what was not timed: one item a line. */
export function legendLines(result: BenchResult): string[] {
  const r = upgradeResult(result);
  const out = ['scenarios:', ...r.scenarios.map((s) => `  ${s.name} = ${s.description}`)];
  const states = Object.entries(r.states) as [CommitGraphState, string][];
  if (states.length > 0)
    out.push(
      'states:',
      ...states.map(([k, v]) => `  ${k === 'off' ? 'no graph (no mark)' : STATE_NAME[k]} = ${v}`),
    );
  if (r.paths !== undefined) out.push(...pathsLines(r.paths));
  if (r.skipped.length > 0)
    out.push('not timed:', ...r.skipped.map((s) => `  ${s.line}: ${s.reason}`));
  return out;
}

function pathsLines(p: NonNullable<BenchResult['paths']>): string[] {
  const named = [p.oneline, p.log]
    .filter((x): x is string => x !== undefined)
    .map((x) => `${x} (changed by ${p.changes[x] ?? 0} of the ${p.commitsScanned} newest commits)`);
  const blame = p.blame === undefined ? '' : `; blame: ${p.blame}`;
  return [`paths: ${named.join(', ') || 'none'}${blame}`, `  chosen as ${p.rule}`];
}

function bloomLines(r: BenchResult): string[] {
  if (r.bloom.length === 0) return [];
  const out = [
    'changed-path Bloom filters read by git (its trace2 statistics, one untimed run per copy before the +bloom columns):',
  ];
  for (const b of r.bloom) {
    const what =
      b.blameQueries !== undefined
        ? `${b.blameQueries} filter queries, ${b.blameNo ?? 0} answered "not changed"`
        : `${b.definitelyNot} commits "definitely not", ${b.maybe} "maybe" (${b.falsePositive} false positives), ${b.filterNotPresent} without a filter`;
    out.push(`${b.scenario}: ${b.line}: ${what}`);
  }
  return out;
}

function timingLines(
  r: BenchResult,
  title: string,
  commands: BenchResult['commands'],
  render: typeof table,
): string[] {
  if (commands.length === 0) return [];
  const out = [
    title,
    r.clock === 'cpu'
      ? "warm page cache, git's user+system CPU time:"
      : 'warm page cache, wall-clock time:',
    ...render(r, commands, (s) => s.warm, true),
    '',
  ];
  if (r.cold.available) {
    const host =
      r.cold.rereadMBps !== undefined
        ? `; evicted files re-read at ${Math.round(r.cold.rereadMBps)} MB/s`
        : '';
    out.push(
      `cold page cache, wall-clock time (the copy's files evicted before every run with ${r.cold.reason}${host}; on a virtual machine the host may still cache the disk, so this is "not in this kernel's page cache", not "read from the device"):`,
    );
    out.push(...render(r, commands, (s) => s.cold, false), '');
  }
  return out;
}

/** The tables and what is needed to read them, as text (Markdown tables). */
export function formatReport(result: BenchResult): string {
  const r = upgradeResult(result);
  const out: string[] = [];
  out.push(`git repack-ts bench: ${r.repository}`);
  out.push(
    `git ${r.gitVersion}; ${r.objects} objects${r.promisor ? ' (partial clone: promisor packs, missing objects allowed)' : ''}; median of ${r.runs} run${r.runs === 1 ? '' : 's'}, scenarios interleaved in every round`,
  );
  const seed = r.commands.filter((c) => c.group === 'seed');
  const user = r.commands.filter((c) => c.group === 'user');
  const legend = seed
    .filter((c) => c.state === 'off')
    .map((c) => `${c.label} = git ${c.args.join(' ')}`);
  if (seed.length > 0)
    out.push(
      `${legend.join('; ')}${legend.length > 0 ? '; ' : ''}+cg = with a commit-graph (written untimed), otherwise -c core.commitGraph=false`,
    );
  out.push(
    "size = the .pack files; % = against none, in the same round (median over rounds); n/a = none took 0 s in a round (shorter than the clock's tick: raise --min-time)",
  );
  const batched = r.commands.filter((c) => c.repeat > 1);
  if (batched.length > 0)
    out.push(
      `short commands run back to back as one timed run (time per invocation shown): ${batched.map((c) => `${c.label} ×${c.repeat}`).join(', ')}`,
    );
  out.push(...legendLines(r), '');
  out.push(...timingLines(r, "the seed's walks:", seed, table));
  out.push(...timingLines(r, 'the commands users run:', user, userTable));
  if (r.cold.requested && !r.cold.available)
    out.push(`cold page cache: unavailable (${r.cold.reason})`, '');
  out.push(...bloomLines(r));
  for (const s of r.scenarios) {
    const stable =
      s.rerunReencodes === undefined
        ? ''
        : s.rerunReencodes === 0
          ? '; stable: a second rewrite re-encodes nothing'
          : `; UNSTABLE: a second rewrite would re-encode ${s.rerunReencodes} entries`;
    const re = s.reencoded;
    const graph = s.commitGraphBytes > 0 ? ' (with the commit-graph)' : '';
    const bloom =
      s.bloomGraphBytes === undefined
        ? ''
        : `; commit-graph with Bloom filters: ${mib(s.bloomGraphBytes)} in ${(s.bloomGraphSeconds ?? 0).toFixed(1)} s`;
    out.push(
      `${s.name}: rewrite re-encoded ${re.commit} commits, ${re.tree} trees, ${re.blob} blobs, ${re.tag} tags in ${s.setupSeconds.toFixed(1)} s${graph}${bloom}${stable}`,
    );
  }
  out.push(...shareOfBothLines(r));
  const spreads = r.scenarios.flatMap((s) =>
    Object.entries(s.warm).map(([id, c]) => ({ id, s: s.name, v: c.spread })),
  );
  if (r.runs > 1 && spreads.length > 0) {
    const sorted = [...spreads].sort((a, b) => a.v - b.v);
    const worst = sorted[sorted.length - 1]!;
    out.push(
      `run-to-run spread (max−min)/median, warm: median ${pct(sorted[sorted.length >> 1]!.v).replace('+', '')}, worst ${pct(worst.v).replace('+', '')} (${worst.id}, ${worst.s})`,
    );
  }
  if (r.reader) out.push('', ...formatReader(r));
  return out.join('\n') + '\n';
}

/**
 * How much of `both` each `auto` scenario gets (issue 6's target: at least 80 % of `both`'s walk
 * speed-up for at most half of its size increase): the share of `both`'s size increase, of its
 * speed-up in each column, and of the time it saves on the walks without a commit-graph together
 * (the seed's, or where none was timed, the user columns without one).
 */
export interface BothShare {
  scenario: string;
  size: number;
  columns: Record<string, number>;
  /** null where not judged (no walk without a commit-graph, or both saved nothing). */
  walks: number | null;
}

/** The walks the verdict is about: those without a commit-graph, the seed's first. */
function plainWalks(r: BenchResult): BenchResult['commands'] {
  const off = r.commands.filter((c) => c.state === 'off');
  const seed = off.filter((c) => c.group === 'seed');
  return seed.length > 0 ? seed : off;
}

export function shareOfBoth(r: BenchResult): BothShare[] {
  const none = r.scenarios[0];
  const both = r.scenarios.find((s) => s.name === 'both');
  if (none === undefined || both === undefined || both.packBytes === none.packBytes) return [];
  const plain = plainWalks(r);
  /** Time saved on the walks without a commit-graph; NaN when a cell is missing or there is none. */
  const saved = (s: ScenarioResult): number => {
    if (plain.length === 0) return NaN;
    let t = 0;
    for (const c of plain) {
      const a = none.warm[c.id]?.median;
      const b = s.warm[c.id]?.median;
      if (a === undefined || b === undefined) return NaN;
      t += a - b;
    }
    return t;
  };
  const bothSaved = saved(both);
  const out: BothShare[] = [];
  for (const s of r.scenarios) {
    if (!s.name.startsWith('auto')) continue;
    const columns: Record<string, number> = {};
    for (const c of r.commands) {
      const a = s.warm[c.id]?.vsNone;
      const b = both.warm[c.id]?.vsNone;
      // A speed-up below a millionth is a rounding of equal times (10 ms CPU ticks), not a base to divide by.
      if (typeof a === 'number' && typeof b === 'number' && b < -1e-6) columns[c.label] = a / b;
    }
    const walks = bothSaved > 0 ? saved(s) / bothSaved : NaN;
    out.push({
      scenario: s.name,
      size: (s.packBytes - none.packBytes) / (both.packBytes - none.packBytes),
      columns,
      walks: Number.isFinite(walks) ? walks : null,
    });
  }
  return out;
}

function shareOfBothLines(r: BenchResult): string[] {
  const shares = shareOfBoth(r);
  if (shares.length === 0) return [];
  const p = (v: number | null): string =>
    v !== null && Number.isFinite(v) ? `${Math.round(v * 100)}%` : '–';
  const walks =
    plainWalks(r)
      .map((c) => c.label)
      .join(' + ') || 'no walk';
  const out = [
    '',
    `against both (target: at least 80% of its speed-up for at most 50% of its size increase; "walks" = time saved on ${walks} together):`,
  ];
  for (const s of shares) {
    const cols = Object.entries(s.columns)
      .map(([k, v]) => `${k} ${p(v)}`)
      .join(', ');
    const why =
      plainWalks(r).length === 0
        ? 'no walk without a commit-graph timed'
        : 'both saved no time on them';
    const met =
      s.walks === null ? `not judged: ${why}` : s.size <= 0.5 && s.walks >= 0.8 ? 'met' : 'not met';
    out.push(
      `${s.scenario}: ${p(s.size)} of the size increase; of the speed-up: ${cols}; walks ${p(s.walks)} (${met})`,
    );
  }
  return out;
}

function formatReader(r: BenchResult): string[] {
  const out: string[] = [];
  const rd = r.reader!;
  if (rd.lookup) {
    const l = rd.lookup;
    out.push(
      `object lookup: ${l.ids} ids of ${l.idx}, ${l.ids} look-ups in shuffled order (half misses), median of ${l.rounds} rounds, CPU time`,
    );
    out.push(
      '| structure | build ms | lookups ms | ns/lookup | vs ours |',
      '|---|---|---|---|---|',
    );
    for (const x of l.rows)
      out.push(
        `| ${x.structure} | ${x.buildMs.toFixed(0)} | ${x.lookupMs.toFixed(0)} | ${x.nsPerLookup.toFixed(0)} | ${x.vsOurs.toFixed(2)}× |`,
      );
    out.push('');
  }
  if (rd.cache) {
    const c = rd.cache;
    out.push(
      `delta base cache: our reader walking the newest ${c.commits} commits from HEAD; cap ${mib(c.maxBytes)} and the entry count below; best of ${c.rounds}; CPU seconds of our process (hit rate of the cache)`,
    );
    for (const w of ['log-raw', 'log-S'] as const) {
      const rows = c.rows.filter((x) => x.workload === w);
      if (rows.length === 0) continue;
      const first = rows[0]!.walk;
      out.push(
        `${w}: ${first.commits} commits, ${first.trees} tree reads${w === 'log-S' ? `, ${first.blobs} blob reads (${first.missing} missing)` : ''}`,
      );
      out.push(
        `| entries | ${CACHE_VARIANTS.join(' | ')} |`,
        `|---|${CACHE_VARIANTS.map(() => '---').join('|')}|`,
      );
      const caps = [...new Set(rows.map((x) => x.maxEntries))];
      for (const cap of caps) {
        const cells = CACHE_VARIANTS.map((v) => {
          const x = rows.find((y) => y.maxEntries === cap && y.variant === v);
          return x === undefined ? '–' : `${seconds(x.seconds)} (${(x.hitRate * 100).toFixed(0)}%)`;
        });
        out.push(`| ${cap} | ${cells.join(' | ')} |`);
      }
      out.push('');
    }
  }
  if (rd.zstd) {
    const z = rd.zstd;
    if (!z.available) out.push(`zstd vs zlib: ${z.reason}`);
    else
      out.push(
        `zstd vs zlib (${z.reader}, median of ${z.rounds}): every one of ${z.objects} objects read in ${seconds(z.zstdSeconds)} from a zstd pack (level 10, dictionaries; ${(z.zstdBytes / 1048576).toFixed(1)} MiB), ${seconds(z.zlibSeconds)} from the zlib packs (${(z.zlibBytes / 1048576).toFixed(1)} MiB): time ${pct(change(z.zstdSeconds, z.zlibSeconds))}, size ${pct(change(z.zstdBytes, z.zlibBytes))}`,
      );
  }
  return out;
}
