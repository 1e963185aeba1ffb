import type { BenchResult, ScenarioResult } from './types.js';
import { mib, pct, seconds } from './report.js';

/**
 * The table as a chart: one panel per column (size, then each timing), one horizontal bar per
 * scenario in every panel, its length proportional to the value (the longest bar of a panel
 * fills it), labelled with the value and the change against `none`. Hand-written SVG, no
 * dependency; every bar is a `<rect class="bar" data-scenario=… data-metric=…>`.
 */
/** Width of the bar area; the label column fits the longest scenario name, the value column after it. */
const BAR_MAX = 170;
const VALUE_W = 115;
const BAR_H = 16;
const GAP = 6;
const COLS = 3;
const COLORS = ['#8c8c8c', '#4e79a7', '#59a14f', '#e15759', '#f28e2b', '#b07aa1', '#76b7b2', '#edc948', '#9c755f', '#ff9da7'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

interface Panel {
  id: string;
  title: string;
  values: number[];
  /** Change against none (the table's same-round figure for timings). */
  change: number[];
  text: (v: number) => string;
}

export function renderSvg(r: BenchResult): string {
  const sc: ScenarioResult[] = r.scenarios;
  const none = sc[0]!;
  const panels: Panel[] = [{ id: 'size', title: 'size (.pack files)', values: sc.map((s) => s.packBytes), change: sc.map((s) => s.packBytes / none.packBytes - 1), text: mib }];
  for (const c of r.commands) {
    panels.push({ id: c.id, title: `${c.label} (warm)`, values: sc.map((s) => s.warm[c.id]?.median ?? NaN), change: sc.map((s) => s.warm[c.id]?.vsNone ?? NaN), text: seconds });
  }
  if (r.cold.available) {
    for (const c of r.commands) {
      panels.push({ id: `${c.id}-cold`, title: `${c.label} (cold)`, values: sc.map((s) => s.cold[c.id]?.median ?? NaN), change: sc.map((s) => s.cold[c.id]?.vsNone ?? NaN), text: seconds });
    }
  }
  const LABEL_W = Math.max(60, 7 * Math.max(...sc.map((s) => s.name.length)) + 10);
  const PANEL_W = LABEL_W + BAR_MAX + VALUE_W;
  const panelH = 24 + sc.length * (BAR_H + GAP) + 8;
  const rows = Math.ceil(panels.length / COLS);
  const top = 58;
  const width = COLS * PANEL_W + 20;
  const height = top + rows * panelH + 10;
  const o: string[] = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`);
  o.push(`<title>${esc(`git repack-ts bench: ${r.repository}`)}</title>`);
  o.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  o.push(`<text x="10" y="18" font-size="14" font-weight="bold">${esc(`git repack-ts bench — ${r.repository}`)}</text>`);
  o.push(`<text x="10" y="36">${esc(`git ${r.gitVersion}, ${r.objects} objects, median of ${r.runs} run(s), ${r.clock === "cpu" ? "git CPU time" : "wall-clock"}; shorter is better; % against none in the same round`)}</text>`);
  o.push(`<text x="10" y="50">${esc(r.commands.filter((c) => !c.commitGraph).map((c) => `${c.label} = git ${c.args.join(' ')}`).join('; '))}</text>`);
  panels.forEach((p, pi) => {
    const x0 = 10 + (pi % COLS) * PANEL_W;
    const y0 = top + Math.floor(pi / COLS) * panelH;
    const max = Math.max(...p.values.filter((v) => Number.isFinite(v)), 1e-9);
    const barMax = BAR_MAX;
    o.push(`<g class="panel" data-metric="${esc(p.id)}">`);
    o.push(`<text x="${x0}" y="${y0 + 14}" font-weight="bold">${esc(p.title)}</text>`);
    sc.forEach((s, si) => {
      const v = p.values[si]!;
      const y = y0 + 22 + si * (BAR_H + GAP);
      const w = Number.isFinite(v) ? Math.max(1, (v / max) * barMax) : 0;
      const label = !Number.isFinite(v) ? '–' : si === 0 ? p.text(v) : `${p.text(v)} ${pct(p.change[si]!)}`;
      o.push(`<text x="${x0}" y="${y + 12}">${esc(s.name)}</text>`);
      o.push(`<rect class="bar" data-scenario="${esc(s.name)}" data-metric="${esc(p.id)}" x="${x0 + LABEL_W}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${COLORS[si % COLORS.length]}"/>`);
      o.push(`<text x="${(x0 + LABEL_W + w + 4).toFixed(1)}" y="${y + 12}">${esc(label)}</text>`);
    });
    o.push('</g>');
  });
  o.push('</svg>');
  return o.join('\n') + '\n';
}
