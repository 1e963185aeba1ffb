/**
 * git's sigchain: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove the lock and the temporary files,
 * then the process dies of the signal. A real rewrite is stopped at several phases (the fault
 * harness's `stop`), signalled, resumed; afterwards no lock, no temporary file, the same objects.
 * A closed stdout is git's SIGPIPE: silent, 141, compared with git verify-pack on the same pack.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { countObjects, fsckStrict, gitEnv, objectSet } from './helpers/git.js';
import { leftovers, runUntil } from './helpers/faults.js';
import { BIN } from './helpers/tool.js';

const CASES: [string, NodeJS.Signals][] = [
  ['phase:locked', 'SIGINT'],
  ['progress:writing*', 'SIGHUP'], // the new pack being written
  ['phase:written', 'SIGTERM'], // written, not yet proved
  ['progress:validating', 'SIGHUP'],
  ['phase:proved', 'SIGPIPE'],
  ['phase:fsck', 'SIGINT'], // the fsck view is built
];

describe('signals during a rewrite (git’s sigchain)', () => {
  it.each(CASES)('stopped at %s, then %s: no lock, no temporary file, the same objects', async (point, sig) => {
    const repo = useFixtureCopy('multi-pack');
    const before = objectSet(repo);
    const run = await runUntil(['--graph-compression=0', '--blob-compression=1', '-q'], repo, point);
    try {
      expect(run.stopped).toBe(true);
      // What a signal must clean up is there at this moment.
      if (point !== 'phase:locked') expect(leftovers(repo).length).toBeGreaterThan(1);
      expect(leftovers(repo)).toContain('maintenance.lock');
      process.kill(run.pid, sig);
      run.resume();
      const r = await run.done;
      // Dies of the signal, like git. A small repository's run has no idle turn of the event loop
      // before its end, so it may finish first: either way nothing of it is left behind.
      expect(r.signal).toBe(sig);
      expect(r.stderr).toBe('');
    } finally {
      run.kill();
    }
    expect(leftovers(repo)).toEqual([]);
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo).status).toBe(0);
    expect(countObjects(repo).garbage).toBe(0);
  });

  // A rewrite big enough to be interrupted for real (the handler runs at the event loop's next idle
  // turn): jq's repository, copied, with SIGINT while the new pack is being written.
  const jq = '/work/.mirror/jqlang+jq/repo';
  it.skipIf(!fs.existsSync(jq))('SIGINT in the middle of writing a 23k-object pack: the old pack stays, nothing else', async () => {
    const top = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'sig-jq-'));
    try {
      const repo = path.join(top, 'jq.git');
      expect(spawnSync('cp', ['-a', jq, repo]).status).toBe(0);
      const packDir = path.join(repo, 'objects/pack');
      const before = fs.readdirSync(packDir).sort();
      const child = spawn(process.execPath, [BIN, '--graph-compression=0', '--blob-compression=1', '-q'], { cwd: repo, env: gitEnv(), stdio: 'ignore' });
      const done = new Promise<NodeJS.Signals | null>((res) => child.on('close', (_c, s) => res(s)));
      while (!fs.readdirSync(packDir).some((n) => n.startsWith('tmp_pack_'))) await new Promise((r) => setTimeout(r, 5));
      child.kill('SIGINT');
      expect(await done).toBe('SIGINT');
      expect(fs.readdirSync(packDir).sort()).toEqual(before);
      expect(fs.readdirSync(path.join(repo, 'objects')).filter((n) => /^tmp_|lock$|journal/.test(n))).toEqual([]);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  }, 60_000);

  it('a closed stdout: exit 141 and nothing on stderr, as git verify-pack -v | true', () => {
    const pack = fs.readdirSync(path.join(fixturePath('basic'), '.git/objects/pack')).find((n) => n.endsWith('.pack'))!;
    const file = path.join(fixturePath('basic'), '.git/objects/pack', pack);
    const sh = (cmd: string) => spawnSync('bash', ['-c', `${cmd} | true; echo "\${PIPESTATUS[0]}"`], { env: gitEnv(), encoding: 'utf8' });
    const git = sh(`git verify-pack -v '${file}'`);
    const ours = sh(`'${process.execPath}' '${BIN}' verify -v '${file}'`);
    expect(git.stdout).toBe('141\n');
    expect({ status: ours.stdout, stderr: ours.stderr }).toEqual({ status: git.stdout, stderr: git.stderr });
  });
});
