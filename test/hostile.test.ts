/**
 * Hostile input: every damaged pack, idx or rev of the corpus (test/helpers/hostile.ts) is put
 * into a copy of its fixture, then `verify`, `inspect` and the repack run on it. verify must say
 * `error: <file>: … at offset N` and exit 1; inspect and the repack must stop with
 * `fatal: <file>: … at offset N`, exit 128 (inspect may also succeed when the damage is in bytes
 * it does not read), leave the repository byte for byte as it was, and never crash. A repack that
 * succeeds must have lost nothing (a damaged idx checksum, say, is repaired by the rewrite).
 * Memory and time are bounded: the CLI runs are measured (peak RSS, wall time).
 *
 * The suite runs every variant through the commands in-process and a sample through the CLI;
 * `npm run reliability` runs every variant through the CLI as well.
 */
import * as fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { LONG, record, scaled } from './helpers/faults.js';
import { objectSet } from './helpers/git.js';
import { hostileCorpus, type Variant } from './helpers/hostile.js';
import { inProcess, pinProcessEnv, tryVariant, viaCli, type Run } from './helpers/hostile-run.js';

pinProcessEnv();

let corpus: Variant[] = [];
const pristineSet = new Map<FixtureName, string[]>();

beforeAll(() => {
  corpus = hostileCorpus();
  for (const v of corpus) if (!pristineSet.has(v.fixture)) pristineSet.set(v.fixture, objectSet(fixturePath(v.fixture)));
});

/** The suite's in-process sample: every forged variant, each region of each fixture once, basic's every third. */
function sample(all: Variant[]): Variant[] {
  const seen = new Map<string, number>();
  return all.filter((v) => {
    const k = `${v.fixture} ${v.region}`;
    const i = seen.get(k) ?? 0;
    seen.set(k, i + 1);
    return v.name.startsWith('forged') || i === 0 || (v.fixture === 'basic' && i % 3 === 0);
  });
}

/** The suite's CLI sample: one variant of each kind that stresses memory or time the most. */
const CLI_SAMPLE = [
  /forged delta chain: an OFS_DELTA chain 4100 deep/,
  /forged delta base: REF_DELTA cycle of three/,
  /forged declared size: a blob declaring 3 GB/,
  /forged delta: OFS_DELTA: result size 3 GB/,
  /^sha256 idx fanout: non-monotonic/,
  /^large-offset truncation: pack cut/,
  /^basic zlib data: the largest whole entry .*middle byte/,
];

async function runCorpus(label: string, vs: Variant[], run: (args: string[], cwd: string) => Run | Promise<Run>): Promise<void> {
  const problems: string[] = [];
  const outcomes = { detected: 0, fsck: 0, repaired: 0, accepted: 0 };
  let handled = 0;
  const slow: [number, string][] = [];
  let rss: [number, string] = [0, ''];
  for (const v of vs) {
    const j = await tryVariant(v, run, pristineSet);
    if (j.maxRssKiB > rss[0]) rss = [j.maxRssKiB, v.name];
    outcomes[j.outcome]++;
    if (j.problems.length === 0) handled++;
    problems.push(...j.problems.map((p) => p.msg));
    slow.push([j.ms, v.name]);
  }
  slow.sort((a, b) => b[0] - a[0]);
  record(`damaged inputs (${label})`, vs.length, handled, [
    `${outcomes.detected} refused by our checks, ${outcomes.fsck} refused by the git fsck safety net, ${outcomes.repaired} repaired by the rewrite with nothing lost, ${outcomes.accepted} sound controls accepted`,
    `slowest: ${slow.slice(0, 3).map(([ms, n]) => `${n} ${ms} ms`).join('; ')}`,
    ...(rss[0] > 0 ? [`largest peak RSS ${(rss[0] / 1024).toFixed(0)} MiB (${rss[1]})`] : []),
  ]);
  if (process.env.REPACK_TS_HOSTILE_LOG) fs.writeFileSync(process.env.REPACK_TS_HOSTILE_LOG, problems.join('\n') + '\n' + slow.map(([ms, n]) => `${ms} ${n}`).join('\n'));
  expect(problems).toEqual([]);
}

describe('hostile packs, indexes and reverse indexes', () => {
  it('the corpus covers every region', () => {
    const regions = new Set(corpus.map((v) => v.region));
    for (const r of ['pack header', 'entry header', 'zlib data', 'delta data', 'trailer', 'truncation', 'idx header', 'idx fanout', 'idx ids', 'idx crc', 'idx offsets', 'idx 64-bit offsets', 'idx trailer', 'rev', 'declared size', 'delta', 'delta base', 'delta chain']) {
      expect(regions.has(r), r).toBe(true);
    }
    expect(corpus.length).toBeGreaterThan(250);
  });

  it('every variant, in-process: clean errors, repository untouched', async () => {
    await runCorpus('in-process', LONG ? corpus : sample(corpus), inProcess);
  }, scaled(240_000, 3_600_000));

  it('through the CLI: exit codes, messages, bounded memory and time', async () => {
    await runCorpus('CLI, peak RSS < 200 MiB, < 30 s', LONG ? corpus : CLI_SAMPLE.map((re) => corpus.find((v) => re.test(v.name))!), viaCli);
  }, scaled(240_000, 7_200_000));
});
