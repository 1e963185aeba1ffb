/**
 * Concurrent git: while the repack is stopped at a chosen moment (a fault point with the `stop`
 * action: the process SIGSTOPs itself and the test SIGCONTs it), git writes into the repository —
 * `git commit`, `git hash-object -w`, `git fetch` from a local remote (loose and as a pack) — or
 * rewrites it (`git repack -a -d`, as a concurrent gc would: the packs being read vanish). Every
 * object there before or written meanwhile must be there afterwards, `git fsck --strict` must
 * pass, and the run must succeed or fail cleanly with a clear message. A second repack started
 * meanwhile must refuse clearly; so does git maintenance.
 */
import * as fs from 'node:fs';
import { hostname } from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { dateEnv, fsckStrict, git, gitOk, objectSet } from './helpers/git.js';
import {
  dropScratch,
  integrityProblems,
  leftovers,
  LONG,
  record,
  runUntil,
  scaled,
  scratchCopy,
  spawnTool,
  toolFault,
  type StoppedRun,
} from './helpers/faults.js';

const ARGS = ['-q', '--graph-compression=0'];
/** Moments to stop at: after listing, while writing, before fsck, before install, before removal, before loose removal. */
const MOMENTS = [
  'phase:listed',
  'progress:writing objects',
  'phase:fsck',
  'phase:install',
  'phase:remove',
  'phase:loose',
];

let tick = 5000;

/** Runs still stopped when a test gives up are killed, never left behind. */
const live = new Set<{ kill(): void }>();
afterEach(() => {
  for (const r of live) r.kill();
  live.clear();
});
async function stopAt(repo: string, moment: string): Promise<StoppedRun> {
  const run = await runUntil(ARGS, repo, moment);
  live.add(run);
  return run;
}

/** Writes into the work tree and commits; returns the ids of the new commit, tree and blob. */
function commitSomething(repo: string, label: string): string[] {
  const f = path.join(repo, `concurrent-${label}.txt`);
  fs.writeFileSync(f, `written while the repack ran: ${label}\n`);
  gitOk(['add', path.basename(f)], { cwd: repo });
  gitOk(['commit', '-q', '-m', `concurrent ${label}`], { cwd: repo, env: dateEnv(tick++) });
  const commit = gitOk(['rev-parse', 'HEAD'], { cwd: repo }).trim();
  const tree = gitOk(['rev-parse', 'HEAD^{tree}'], { cwd: repo }).trim();
  const blob = gitOk(['rev-parse', `HEAD:${path.basename(f)}`], { cwd: repo }).trim();
  return [commit, tree, blob];
}

function hashObject(repo: string, label: string): string {
  return gitOk(['hash-object', '-w', '--stdin'], {
    cwd: repo,
    input: `a loose blob written meanwhile: ${label}\n`,
  }).trim();
}

/** A local remote: a copy of basic with two more commits on main. */
function makeRemote(label: string): { dir: string; ids: string[] } {
  const dir = scratchCopy(fixturePath('basic'), `remote-${label}`);
  const ids = [
    ...commitSomething(dir, `remote-${label}-1`),
    ...commitSomething(dir, `remote-${label}-2`),
  ];
  return { dir, ids };
}

function missing(repo: string, ids: string[]): string[] {
  return ids.filter((id) => git(['cat-file', '-e', id], { cwd: repo }).status !== 0);
}

describe('git writes into the repository while the repack runs', () => {
  const writers: Record<string, (repo: string, label: string) => string[]> = {
    'git commit': (repo, label) => commitSomething(repo, label),
    'git hash-object -w': (repo, label) => [hashObject(repo, label)],
    'git fetch (loose objects)': (repo, label) => {
      const remote = makeRemote(label);
      try {
        gitOk(
          ['fetch', '-q', remote.dir, `main:refs/remotes/concurrent/${label.replace(/\W/g, '-')}`],
          { cwd: repo },
        );
        return remote.ids;
      } finally {
        dropScratch(remote.dir);
      }
    },
    'git fetch (a new pack)': (repo, label) => {
      const remote = makeRemote(label);
      try {
        gitOk(
          [
            '-c',
            'fetch.unpackLimit=1',
            'fetch',
            '-q',
            remote.dir,
            `main:refs/remotes/concurrent/${label.replace(/\W/g, '-')}`,
          ],
          { cwd: repo },
        );
        return remote.ids;
      } finally {
        dropScratch(remote.dir);
      }
    },
  };
  for (const [name, write] of Object.entries(writers)) {
    it(
      name,
      async () => {
        const moments =
          LONG || name === 'git commit' ? MOMENTS : ['phase:listed', 'phase:fsck', 'phase:remove'];
        const problems: string[] = [];
        let tried = 0;
        let held = 0;
        for (const moment of moments) {
          const repo = scratchCopy(fixturePath('basic'), 'concurrent');
          try {
            const before = objectSet(repo);
            const run = await stopAt(repo, moment);
            expect(run.stopped, `${moment} reached`).toBe(true);
            const added = write(repo, moment);
            run.resume();
            const r = await run.done;
            tried++;
            const p: string[] = [];
            if (r.status !== 0) p.push(`the repack failed (${r.status}): ${r.stderr}`);
            const gone = missing(repo, added);
            if (gone.length > 0) p.push(`objects written meanwhile are gone: ${gone.join(', ')}`);
            p.push(...integrityProblems(repo, before));
            const left = leftovers(repo);
            if (left.length > 0) p.push(`left ${left.join(', ')}`);
            if (p.length === 0) held++;
            problems.push(...p.map((x) => `${name} at ${moment}: ${x}`));
          } finally {
            dropScratch(repo);
          }
        }
        record(`concurrent ${name}`, tried, held);
        expect(problems).toEqual([]);
      },
      scaled(60_000, 600_000),
    );
  }

  it(
    'a writer running throughout the repack (no chosen moment)',
    async () => {
      const rounds = scaled(2, 10);
      const problems: string[] = [];
      for (let round = 0; round < rounds; round++) {
        const repo = scratchCopy(fixturePath('basic'), 'writer');
        try {
          const before = objectSet(repo);
          const { done } = spawnTool(ARGS, repo);
          let finished = false;
          void done.then(() => (finished = true));
          const added: string[] = [];
          let i = 0;
          while (!finished) {
            added.push(
              ...(i % 3 === 0
                ? commitSomething(repo, `w${round}-${i}`)
                : [hashObject(repo, `w${round}-${i}`)]),
            );
            i++;
            await new Promise((r) => setTimeout(r, 1));
          }
          const r = await done;
          if (r.status !== 0)
            problems.push(`round ${round}: the repack failed (${r.status}): ${r.stderr}`);
          const gone = missing(repo, added);
          if (gone.length > 0)
            problems.push(
              `round ${round}: ${gone.length} of ${added.length} objects written meanwhile are gone`,
            );
          problems.push(...integrityProblems(repo, before).map((x) => `round ${round}: ${x}`));
          // And a second run packs what was written meanwhile.
          const again = toolFault(ARGS, repo, undefined);
          if (again.status !== 0)
            problems.push(`round ${round}: the second run failed: ${again.stderr}`);
          if (missing(repo, added).length > 0)
            problems.push(`round ${round}: objects lost by the second run`);
        } finally {
          dropScratch(repo);
        }
      }
      record(
        'concurrent writer throughout the repack',
        rounds,
        rounds - new Set(problems.map((p) => p.split(':')[0])).size,
      );
      expect(problems).toEqual([]);
    },
    scaled(60_000, 600_000),
  );
});

describe('what is not a concurrent write', () => {
  it('a ref to an object that exists nowhere is still a git fsck failure (nothing was changed)', () => {
    const repo = scratchCopy(fixturePath('basic'), 'dangling-ref');
    try {
      fs.writeFileSync(path.join(repo, '.git/refs/heads/broken'), 'f'.repeat(40) + '\n');
      const packs = fs.readdirSync(path.join(repo, '.git/objects/pack')).sort();
      const r = toolFault([...ARGS, '--fsck=full'], repo, undefined);
      expect(r.status).toBe(128);
      expect(r.stderr).toMatch(
        /^fatal: git fsck found problems in the rewritten repository; nothing was changed\./,
      );
      expect(r.stderr).toMatch(/refs\/heads\/broken: invalid sha1 pointer f{40}/);
      expect(fs.readdirSync(path.join(repo, '.git/objects/pack')).sort()).toEqual(packs);
      expect(leftovers(repo)).toEqual([]);
    } finally {
      dropScratch(repo);
    }
  });
});

describe('the packs vanish under the repack (a concurrent git repack -A -d, as gc does)', () => {
  for (const moment of MOMENTS) {
    it(`at ${moment}`, async () => {
      const repo = scratchCopy(fixturePath('multi-pack'), 'vanish');
      try {
        const before = objectSet(repo);
        const run = await stopAt(repo, moment);
        expect(run.stopped).toBe(true);
        gitOk(['repack', '-A', '-d', '-q'], { cwd: repo });
        run.resume();
        const r = await run.done;
        // Either it finished, or it stopped with a clear message; never a lost object.
        if (r.status !== 0) {
          expect(r.status).toBe(128);
          expect(r.stderr).toMatch(/^fatal: .*(vanished|No such file|no such file)/);
          expect(r.stderr).toMatch(/nothing was changed|finishes the removal|left in place/);
        }
        expect(integrityProblems(repo, before)).toEqual([]);
        // The next run completes and leaves nothing behind.
        const next = toolFault(ARGS, repo, undefined);
        expect(next.stderr).toBe('');
        expect(next.status).toBe(0);
        expect(leftovers(repo)).toEqual([]);
        expect(integrityProblems(repo, before)).toEqual([]);
        record(`packs vanish at ${moment}`, 1, 1, [
          r.status === 0 ? 'completed' : `refused: ${r.stderr.split('\n')[0]}`,
        ]);
        if (process.env.REPACK_TS_SHOW) console.log(moment, r.status, r.stderr);
      } finally {
        dropScratch(repo);
      }
    }, 60_000);
  }
});

describe('one repack at a time', () => {
  it('a second repack refuses clearly while the first holds the lock, and so does git maintenance', async () => {
    const repo = scratchCopy(fixturePath('basic'), 'two');
    try {
      const before = objectSet(repo);
      const first = await stopAt(repo, 'phase:listed');
      expect(first.stopped).toBe(true);
      const second = toolFault(ARGS, repo, undefined);
      expect(second.status).toBe(128);
      expect(second.stderr).toMatch(
        /^fatal: unable to create '.*maintenance\.lock': File exists\.\n\nAnother git process seems to be running in this repository/,
      );
      const packs = fs.readdirSync(path.join(repo, '.git/objects/pack')).sort();
      const m = git(['maintenance', 'run', '--no-quiet', '--task=incremental-repack'], {
        cwd: repo,
      });
      expect(m.stderr).toMatch(/maintenance(\.lock)?' exists, skipping maintenance/);
      expect(fs.readdirSync(path.join(repo, '.git/objects/pack')).sort()).toEqual(packs);
      first.resume();
      const r = await first.done;
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(fsckStrict(repo).status).toBe(0);
      expect(objectSet(repo)).toEqual(before);
      expect(leftovers(repo)).toEqual([]);
      record('second repack refused while the first runs', 1, 1);
    } finally {
      dropScratch(repo);
    }
  }, 60_000);

  it('a lock left by a killed run of ours is taken over; an empty lock (git maintenance) is respected', () => {
    const repo = scratchCopy(fixturePath('basic'), 'stale');
    try {
      const lock = path.join(repo, '.git/objects/maintenance.lock');
      fs.writeFileSync(lock, `git-repack-ts 999999999 ${hostname()}\n`);
      expect(toolFault(ARGS, repo, undefined).status).toBe(0);
      expect(fs.existsSync(lock)).toBe(false);
      fs.writeFileSync(lock, '');
      const r = toolFault(ARGS, repo, undefined);
      expect(r.status).toBe(128);
      expect(r.stderr).toMatch(/maintenance\.lock': File exists/);
      expect(fs.existsSync(lock)).toBe(true);
    } finally {
      dropScratch(repo);
    }
  });
});
