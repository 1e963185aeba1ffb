import type { BenchResult, Cell, ScenarioResult } from './types.js';
import { change, legendLines, mib, pct, seconds, upgradeResult } from './report.js';

/**
 * The tables as a chart: one panel per column (size, then each timing), one horizontal bar per
 * scenario in every panel, its length proportional to the value (the longest bar of a panel
 * fills it), labelled with the value and the change against `none`. Above the panels, the
 * legend: each scenario's colour and meaning, each state's meaning (`+cg`, `+bloom`), the paths
 * and the columns not timed. Hand-written SVG, no dependency; every bar is a
 * `<rect class="bar" data-scenario=… data-metric=…>`, every legend swatch a
 * `<rect class="legend-swatch" data-scenario=…>`.
 */
/** Width of the bar area; the label column fits the longest scenario name, the value column after it. */
const BAR_MAX = 170;
const VALUE_W = 115;
const BAR_H = 16;
const GAP = 6;
const COLS = 3;
const LINE_H = 14;
/** Average advance of an 11 px sans-serif character, for wrapping and cutting text. */
const CHAR_W = 6.2;
const COLORS = [
  '#8c8c8c',
  '#4e79a7',
  '#59a14f',
  '#e15759',
  '#f28e2b',
  '#b07aa1',
  '#76b7b2',
  '#edc948',
  '#9c755f',
  '#ff9da7',
];

function esc(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

/** Words to lines of at most `max` characters (a longer word gets its own line). */
export function wrap(text: string, max: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const w of text.split(' ')) {
    if (line !== '' && line.length + 1 + w.length > max) {
      out.push(line);
      line = w;
    } else line = line === '' ? w : `${line} ${w}`;
  }
  if (line !== '') out.push(line);
  return out;
}

/** A title cut to fit its panel, the cut marked. */
function fit(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

interface Panel {
  id: string;
  title: string;
  values: number[];
  /** Change against none (the table's same-round figure for timings); null where there is none. */
  change: (number | null)[];
  text: (v: number) => string;
}

function panelsOf(r: BenchResult): Panel[] {
  const sc: ScenarioResult[] = r.scenarios;
  const none = sc[0]!;
  const panels: Panel[] = [
    {
      id: 'size',
      title: 'size (.pack files)',
      values: sc.map((s) => s.packBytes),
      change: sc.map((s) => change(s.packBytes, none.packBytes)),
      text: mib,
    },
  ];
  const timing = (
    id: string,
    title: string,
    cell: (s: ScenarioResult) => Cell | undefined,
  ): Panel => ({
    id,
    title,
    values: sc.map((s) => cell(s)?.median ?? NaN),
    change: sc.map((s) => cell(s)?.vsNone ?? null),
    text: seconds,
  });
  // "(warm)" only where cold panels follow: the long user titles need the room.
  const warm = r.cold.available ? ' (warm)' : '';
  for (const c of r.commands)
    panels.push(
      timing(c.id, `${c.group === 'user' ? 'git ' : ''}${c.label}${warm}`, (s) => s.warm[c.id]),
    );
  if (r.cold.available)
    for (const c of r.commands)
      panels.push(
        timing(
          `${c.id}-cold`,
          `${c.group === 'user' ? 'git ' : ''}${c.label} (cold)`,
          (s) => s.cold[c.id],
        ),
      );
  return panels;
}

/** The legend: a swatch per scenario with its meaning, then the states, paths and columns not timed. */
function legend(
  r: BenchResult,
  x: number,
  y: number,
  width: number,
): { svg: string[]; height: number } {
  const o: string[] = ['<g class="legend">'];
  const max = Math.floor((width - 30) / CHAR_W);
  let yy = y;
  r.scenarios.forEach((s, si) => {
    const lines = wrap(`${s.name} = ${s.description}`, max);
    o.push(
      `<rect class="legend-swatch" data-scenario="${esc(s.name)}" x="${x}" y="${yy - 9}" width="10" height="10" fill="${COLORS[si % COLORS.length]}"/>`,
    );
    for (const l of lines) {
      o.push(`<text class="legend-scenario" x="${x + 16}" y="${yy}">${esc(l)}</text>`);
      yy += LINE_H;
    }
  });
  // The text legend's scenario lines are the swatches above; the rest, indented as there.
  for (const line of legendLines(r).slice(1 + r.scenarios.length)) {
    const indent = line.startsWith('  ') ? 16 : 0;
    for (const l of wrap(line.trim(), max + 2 - indent / CHAR_W)) {
      o.push(`<text class="legend-text" x="${x + indent}" y="${yy}">${esc(l)}</text>`);
      yy += LINE_H;
    }
  }
  o.push('</g>');
  return { svg: o, height: yy - y };
}

export function renderSvg(result: BenchResult): string {
  const r = upgradeResult(result);
  const sc = r.scenarios;
  const panels = panelsOf(r);
  const LABEL_W = Math.max(60, 7 * Math.max(...sc.map((s) => s.name.length)) + 10);
  const PANEL_W = LABEL_W + BAR_MAX + VALUE_W;
  const panelH = 24 + sc.length * (BAR_H + GAP) + 8;
  const rows = Math.ceil(panels.length / COLS);
  const width = COLS * PANEL_W + 20;
  const seed = r.commands
    .filter((c) => c.group === 'seed' && c.state === 'off')
    .map((c) => `${c.label} = git ${c.args.join(' ')}`);
  const lg = legend(r, 10, 50 + (seed.length > 0 ? LINE_H : 0), width);
  const top = 50 + (seed.length > 0 ? LINE_H : 0) + lg.height + 8;
  const height = top + rows * panelH + 10;
  const o: string[] = [];
  o.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
  );
  o.push(`<title>${esc(`git repack-ts bench: ${r.repository}`)}</title>`);
  o.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  o.push(
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(`git repack-ts bench — ${r.repository}`)}</text>`,
  );
  o.push(
    `<text x="10" y="36">${esc(`git ${r.gitVersion}, ${r.objects} objects, median of ${r.runs} run(s), ${r.clock === 'cpu' ? 'git CPU time' : 'wall-clock'}; shorter is better; % against none in the same round; n/a where none took 0 s`)}</text>`,
  );
  if (seed.length > 0) o.push(`<text x="10" y="50">${esc(seed.join('; '))}</text>`);
  o.push(...lg.svg);
  const titleMax = Math.floor(PANEL_W / CHAR_W) - 2;
  panels.forEach((p, pi) => {
    const x0 = 10 + (pi % COLS) * PANEL_W;
    const y0 = top + Math.floor(pi / COLS) * panelH;
    const max = Math.max(...p.values.filter((v) => Number.isFinite(v)), 1e-9);
    o.push(`<g class="panel" data-metric="${esc(p.id)}">`);
    o.push(
      `<text x="${x0}" y="${y0 + 14}" font-weight="bold">${esc(fit(p.title, titleMax))}<title>${esc(p.title)}</title></text>`,
    );
    sc.forEach((s, si) => {
      const v = p.values[si]!;
      const y = y0 + 22 + si * (BAR_H + GAP);
      const w = Number.isFinite(v) ? Math.max(1, (v / max) * BAR_MAX) : 0;
      const label = !Number.isFinite(v)
        ? '–'
        : si === 0
          ? p.text(v)
          : `${p.text(v)} ${pct(p.change[si])}`;
      o.push(`<text x="${x0}" y="${y + 12}">${esc(s.name)}</text>`);
      o.push(
        `<rect class="bar" data-scenario="${esc(s.name)}" data-metric="${esc(p.id)}" x="${x0 + LABEL_W}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${COLORS[si % COLORS.length]}"/>`,
      );
      o.push(`<text x="${(x0 + LABEL_W + w + 4).toFixed(1)}" y="${y + 12}">${esc(label)}</text>`);
    });
    o.push('</g>');
  });
  o.push('</svg>');
  return o.join('\n') + '\n';
}
