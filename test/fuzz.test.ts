/**
 * The mutation fuzzer over the readers (`verify`, `inspect`): seeded flips, overwrites,
 * truncations, insertions, deletions and duplications of fixture .pack, .idx and .rev files, half
 * of them with every checksum and CRC made consistent again so that the damage reaches the parsers
 * behind them (scripts/reliability/fuzz.mjs; a worker thread, watched for hangs). Any exception
 * that is not a GitError naming the file and offset, a change behind a checksum that verify does
 * not report, or a case slower than 5 s (20 s: a hang) is a finding. Every finding so far
 * became a regression test (test/fuzz-crashers.test.ts).
 *
 * The suite runs a few hundred cases; `npm run reliability` runs many thousands.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fuzz, type FuzzFinding } from '../scripts/reliability/fuzz.mjs';
import { loadSource, materialise, planCase } from '../scripts/reliability/mutate.mjs';
import { FIXTURES, fixturePath } from './fixtures/index.js';
import {
  digestDiff,
  dropScratch,
  integrityProblems,
  objectsDirOf,
  record,
  scaled,
  scratchGitDir,
  treeDigest,
} from './helpers/faults.js';
import { fuzzSources } from './helpers/fuzz-sources.js';
import { objectSet } from './helpers/git.js';
import { inProcess, pinProcessEnv } from './helpers/hostile-run.js';

pinProcessEnv();

describe('mutation fuzzer over verify and inspect', () => {
  it(
    'no crash, hang or missed change',
    async () => {
      const cases = scaled(400, 30_000);
      const r = await fuzz({
        sources: fuzzSources(),
        cases,
        seed: Number(process.env.REPACK_TS_FUZZ_SEED ?? 1),
        dist: process.env.REPACK_TS_DIST,
      });
      const fresh: FuzzFinding[] = r.findings;
      record('fuzz cases (verify + inspect in-process)', r.cases, r.cases - r.findings.length, [
        `${r.ms} ms`,
        ...fresh
          .slice(0, 20)
          .map(
            (f) => `NEW: ${f.kind} on ${f.source} seed ${f.plan.seed}: ${f.message.split('\n')[0]}`,
          ),
      ]);
      if (fresh.length > 0 && process.env.REPACK_TS_FUZZ_LOG)
        fs.writeFileSync(process.env.REPACK_TS_FUZZ_LOG, JSON.stringify(fresh, null, 1));
      expect(r.cases).toBe(cases);
      expect(
        fresh.map(
          (f) =>
            `${f.kind} on ${f.source} seed ${f.plan.seed} ${JSON.stringify(f.plan.ops)}: ${f.message.split('\n')[0]}`,
        ),
      ).toEqual([]);
    },
    scaled(120_000, 7_200_000),
  );
});

describe('mutation fuzzer over the repack', () => {
  it(
    'a damaged pack is refused cleanly (repository untouched) or rewritten with nothing lost',
    async () => {
      const cases = scaled(24, 600);
      const sources = fuzzSources();
      const pristine = new Map(
        sources.map((src) => [src.name, objectSet(fixturePath(src.name as never))]),
      );
      const problems: string[] = [];
      const outcomes = { refused: 0, rewritten: 0 };
      for (let i = 0; i < cases; i++) {
        const src = sources[i % sources.length]!;
        const name = src.name as keyof typeof FIXTURES;
        const seed = 100_000 + i;
        const repo = scratchGitDir(fixturePath(name), FIXTURES[name].gitDir, `rfuzz-${name}`);
        try {
          const s = loadSource(src);
          const plan = planCase(seed, s);
          materialise(
            s,
            plan,
            path.join(objectsDirOf(repo), 'pack'),
            path.basename(src.pack, '.pack'),
          );
          const digest = treeDigest(repo);
          // The full check: mutations with checksums fixed reach entries copied byte for byte, which
          // only `--fsck=full` reads again (the default reads what was written anew).
          const r = await inProcess(['-q', '--graph-compression=0', '--fsck=full'], repo);
          const what = `${name} seed ${seed} ${JSON.stringify(plan.ops)} (${plan.target}${plan.fix ? ', checksums fixed' : ''})`;
          if (r.stderr.includes('internal error'))
            problems.push(`${what}: crashed: ${r.stderr.trim()}`);
          if (r.status === 0) {
            outcomes.rewritten++;
            for (const p of integrityProblems(repo, pristine.get(src.name)!))
              problems.push(`${what}: rewritten but ${p}`);
          } else {
            outcomes.refused++;
            if (r.status !== 128 || !r.stderr.startsWith('fatal: '))
              problems.push(`${what}: exit ${r.status}: ${r.stderr.trim()}`);
            const diff = digestDiff(digest, treeDigest(repo));
            if (diff.length > 0)
              problems.push(`${what}: refused but changed ${diff.slice(0, 3).join('; ')}`);
          }
        } finally {
          dropScratch(repo);
        }
      }
      // Every outcome is one of the two above; anything else is a finding, with no exemption
      // (P1 and P4, the allocations from a declared count or size, are fixed: docs/reliability.md).
      record('fuzz cases (the repack, in-process)', cases, cases - problems.length, [
        `${outcomes.refused} refused with fatal (repository untouched), ${outcomes.rewritten} rewritten with nothing lost`,
      ]);
      expect(problems).toEqual([]);
      expect(outcomes.refused + outcomes.rewritten).toBe(cases);
    },
    scaled(120_000, 3_600_000),
  );
});
