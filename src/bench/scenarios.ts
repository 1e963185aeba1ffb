import { GitError } from '../errors.js';
import { DEFAULT_AUTO_RULE, type AutoRule } from '../repack/encoding.js';
import type { Levels } from '../repack/levels.js';

/**
 * One pack layout to benchmark, built from the repository by our rewriter. The seed's four
 * (`none`, `commit`, `tree`, `both`: which types are stored at zlib level 0, everything else at
 * zlib's default), and `auto` (commits and trees under the `auto` rule). `auto:<bytes>[:<ratio>]`
 * names a candidate rule, for choosing the thresholds by measurement; `+fixed` deflates what the
 * rule does not store with fixed Huffman codes.
 */
export interface Scenario {
  name: string;
  levels: Levels;
  /** For `auto:<bytes>:<ratio>`: the rule to apply instead of the default. */
  autoRule?: AutoRule | undefined;
  /** What the scenario stores uncompressed, in words. */
  description: string;
}

export const DEFAULT_SCENARIOS = ['none', 'commit', 'tree', 'both', 'auto'];

const lv = (commit: number | 'auto', tree: number | 'auto'): Levels => ({
  1: commit,
  2: tree,
  3: -1,
  4: -1,
});

/** Parses one scenario name; anything else is a usage error. */
export function parseScenario(name: string): Scenario {
  switch (name) {
    case 'none':
      return {
        name,
        levels: lv(-1, -1),
        description:
          "the pack as git writes it: every type at zlib's default level (-1), every delta kept (the status quo)",
      };
    case 'commit':
      return {
        name,
        levels: lv(0, -1),
        description: 'commits stored at zlib level 0 (uncompressed), the rest as in none',
      };
    case 'tree':
      return {
        name,
        levels: lv(-1, 0),
        description: 'trees stored at zlib level 0 (uncompressed), the rest as in none',
      };
    case 'both':
      return {
        name,
        levels: lv(0, 0),
        description:
          'commits and trees stored at zlib level 0 (uncompressed), blobs and tags as in none',
      };
    case 'auto':
      return {
        name,
        levels: lv('auto', 'auto'),
        description: `commits and trees under auto (${ruleText(DEFAULT_AUTO_RULE)})`,
      };
    default:
      break;
  }
  const m = /^auto(?::(\d+)(?::(\d*\.?\d+))?)?(\+fixed)?(?:@(commit|tree))?$/.exec(name);
  if (m) {
    const fixed = m[3] !== undefined;
    // Above 1 the ratio clause could not be stable: a stored entry is longer than its data by a
    // few bytes per 64 KiB only, so it would be judged compressible again on the next run.
    if (m[2] !== undefined && Number(m[2]) > 1)
      throw new GitError(
        'usage',
        `scenario '${name}': the ratio is a share of the size, at most 1`,
      );
    const base =
      m[1] === undefined
        ? DEFAULT_AUTO_RULE
        : { smallBytes: Number(m[1]), maxRatio: m[2] === undefined ? Infinity : Number(m[2]) };
    const rule: AutoRule | undefined =
      m[1] === undefined && !fixed ? undefined : fixed ? { ...base, fixed } : { ...base };
    const only = m[4] as 'commit' | 'tree' | undefined;
    const levels = lv(only === 'tree' ? -1 : 'auto', only === 'commit' ? -1 : 'auto');
    const what = only === undefined ? 'commits and trees' : `${only}s only`;
    return {
      name,
      levels,
      autoRule: rule,
      description: `${what} under auto (${ruleText(rule ?? DEFAULT_AUTO_RULE)})`,
    };
  }
  throw new GitError(
    'usage',
    `unknown scenario '${name}' (known: none, commit, tree, both, auto, auto:<bytes>[:<ratio>][+fixed][@commit|@tree])`,
  );
}

export function ruleText(r: AutoRule): string {
  const parts = [`stored below ${r.smallBytes} bytes`];
  if (Number.isFinite(r.maxRatio))
    parts.push(`or when deflate keeps more than ${r.maxRatio} of the size`);
  if (r.fixed === true) parts.push('the rest deflated with fixed Huffman codes');
  return parts.join(' ');
}

/** A comma-separated list; `none` is always measured first (every percentage is against it). */
export function parseScenarioList(spec: string | undefined): Scenario[] {
  const names = (spec ?? DEFAULT_SCENARIOS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (names.length === 0) throw new GitError('usage', '--scenarios needs at least one scenario');
  const seen = new Set<string>();
  const out: Scenario[] = [];
  for (const n of ['none', ...names]) {
    if (seen.has(n)) continue;
    seen.add(n);
    out.push(parseScenario(n));
  }
  return out;
}
