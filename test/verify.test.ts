import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, fixturePath, type FixtureName } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { git, gitEnv, gitOk, listPacks } from './helpers/git.js';
import { BIN, tool } from './helpers/tool.js';

const WITH_PACKS: FixtureName[] = [
  'basic',
  'multi-pack',
  'ref-delta',
  'sha256',
  'large-offset',
  'idx-v1',
  'bare',
  'alternates',
  'promisor',
  'keep',
  'midx-bitmap',
  'big-blob',
  'pack-v3',
];

describe('verify -v agrees with git verify-pack -v line for line', () => {
  for (const name of WITH_PACKS) {
    it(name, () => {
      const repo = fixturePath(name);
      const packs = listPacks(repo);
      expect(packs.length).toBeGreaterThan(0);
      for (const pack of packs) {
        const idx = pack.replace(/\.pack$/, '.idx');
        const theirs = gitOk(['verify-pack', '-v', idx], { cwd: repo });
        const ours = tool(['verify', '-v', idx], { cwd: repo });
        expect(ours.stderr).toBe('');
        expect(ours.status).toBe(0);
        expect(ours.stdout).toBe(theirs);
      }
    });
  }

  it('verifies every pack of the repository by default, silently when sound', () => {
    const r = tool(['verify'], { cwd: fixturePath('multi-pack') });
    expect(r).toMatchObject({ status: 0, stdout: '', stderr: '' });
  });

  it('--json reports each pack', () => {
    const r = tool(['verify', '--json'], { cwd: fixturePath('multi-pack') });
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.ok).toBe(true);
    expect(j.packs.length).toBe(listPacks(fixturePath('multi-pack')).length);
    for (const p of j.packs) expect(p).toMatchObject({ ok: true, problems: [] });
  });

  it('-s prints the statistics only', () => {
    const repo = fixturePath('basic');
    const idx = listPacks(repo)[0]!.replace(/\.pack$/, '.idx');
    const theirs = gitOk(['verify-pack', '-s', idx], { cwd: repo });
    expect(tool(['verify', '-s', idx], { cwd: repo }).stdout).toBe(theirs);
  });
});

/** Copies the fixture's single pack, damages the copy, and returns what verify says of it. */
function damaged(
  name: FixtureName,
  mutate: (pack: Buffer, idx: Buffer) => { pack?: Buffer; idx?: Buffer },
) {
  const repo = useFixtureCopy(name);
  const packPath = listPacks(repo)[0]!;
  const idxPath = packPath.replace(/\.pack$/, '.idx');
  const before = { pack: fs.readFileSync(packPath), idx: fs.readFileSync(idxPath) };
  const out = mutate(Buffer.from(before.pack), Buffer.from(before.idx));
  fs.chmodSync(packPath, 0o644);
  fs.chmodSync(idxPath, 0o644);
  if (out.pack) fs.writeFileSync(packPath, out.pack);
  if (out.idx) fs.writeFileSync(idxPath, out.idx);
  const r = tool(['verify', '--json'], { cwd: repo });
  const human = tool(['verify'], { cwd: repo });
  return { r, human, json: r.stdout ? JSON.parse(r.stdout) : undefined, packPath, idxPath, repo };
}

function entryOffsets(
  repo: string,
  idx: string,
): { offset: number; depth: number; type: string; size: number }[] {
  return gitOk(['verify-pack', '-v', idx], { cwd: repo })
    .split('\n')
    .map((l) => /^[0-9a-f]+ (\w+) +(\d+) (\d+) (\d+)(?: (\d+))?/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({
      type: m[1]!,
      size: Number(m[2]),
      offset: Number(m[4]),
      depth: m[5] ? Number(m[5]) : 0,
    }));
}

describe('verify reports damage with the file and offset, exit 1', () => {
  const pristine = fixturePath('basic');
  const idx0 = listPacks(pristine)[0]!.replace(/\.pack$/, '.idx');
  const entries = entryOffsets(pristine, idx0);
  const firstDelta = entries.find((e) => e.depth > 0)!;
  const firstWhole = entries.find((e) => e.depth === 0 && e.size > 50)!;

  it('a flipped byte in the pack header', () => {
    const { human, json } = damaged('basic', (p) => {
      p[1]! ^= 0xff;
      return { pack: p };
    });
    expect(human.status).toBe(1);
    expect(human.stderr).toMatch(/bad pack signature at offset 0/);
    expect(json.packs[0].problems[0]).toMatchObject({ offset: 0 });
  });

  it('a flipped byte in an entry header', () => {
    const { human, json } = damaged('basic', (p) => {
      p[firstWhole.offset]! ^= 0x70; // type bits
      return { pack: p };
    });
    expect(human.status).toBe(1);
    const offsets = json.packs[0].problems.map((x: { offset: number }) => x.offset);
    expect(offsets).toContain(firstWhole.offset);
  });

  it('a flipped byte in zlib data', () => {
    const { human, json } = damaged('basic', (p) => {
      p[firstWhole.offset + 6]! ^= 0xff;
      return { pack: p };
    });
    expect(human.status).toBe(1);
    expect(human.stderr).toMatch(/CRC32 mismatch/);
    const offsets = json.packs[0].problems.map((x: { offset: number }) => x.offset);
    expect(offsets).toContain(firstWhole.offset);
  });

  it('a flipped byte in delta data', () => {
    const { human, json } = damaged('basic', (p) => {
      p[firstDelta.offset + 5]! ^= 0x01;
      return { pack: p };
    });
    expect(human.status).toBe(1);
    const offsets = json.packs[0].problems.map((x: { offset: number }) => x.offset);
    expect(offsets.some((o: number) => o >= firstDelta.offset && o < firstDelta.offset + 64)).toBe(
      true,
    );
  });

  it('a flipped byte in the trailer', () => {
    const { human } = damaged('basic', (p) => {
      p[p.length - 3]! ^= 0xff;
      return { pack: p };
    });
    expect(human.status).toBe(1);
    const size = fs.statSync(listPacks(pristine)[0]!).size;
    expect(human.stderr).toContain(`at offset ${size - 20}`);
  });

  it('a truncated pack', () => {
    const { human } = damaged('basic', (p) => ({ pack: p.subarray(0, Math.floor(p.length / 2)) }));
    expect(human.status).toBe(1);
    expect(human.stderr).toMatch(/\.pack: .* at offset \d+/);
  });

  it('an idx whose fanout is not monotonic', () => {
    const { human } = damaged('basic', (_p, idx) => {
      idx.writeUInt32BE(0xffffff, 8 + 4 * 10);
      return { idx };
    });
    expect(human.status).toBe(1);
    expect(human.stderr).toMatch(/\.idx: non-monotonic fanout at offset \d+/);
  });

  it('an idx that names the wrong object (its checksum made right again: only the object hash check can see it)', () => {
    let named = '';
    const { human } = damaged('basic', (_p, idx) => {
      // The last bit of the 4th id flipped: ids stay sorted (neighbours differ earlier), fanout
      // unchanged, and the idx's own trailer is recomputed, so no cheaper check notices.
      const at = 8 + 1024 + 20 * 3 + 19;
      idx[at]! ^= 0x01;
      named = idx.toString('hex', at - 19, at + 1);
      crypto
        .createHash('sha1')
        .update(idx.subarray(0, idx.length - 20))
        .digest()
        .copy(idx, idx.length - 20);
      return { idx };
    });
    expect(human.status).toBe(1);
    expect(human.stderr).not.toMatch(/checksum mismatch|out of order|fanout/);
    expect(human.stderr).toMatch(
      new RegExp(`object hashes to [0-9a-f]{40} but the index names it ${named}`),
    );
  });

  it('a pack that does not exist: git verify-pack names its index, as given', () => {
    const cwd = fixturePath('basic');
    for (const name of [
      'nonexistent',
      'nonexistent.pack',
      'nonexistent.idx',
      'sub/nonexistent.pack',
    ]) {
      for (const v of [[], ['-v']]) {
        const r = tool(['verify', ...v, name], { cwd });
        const g = git(['verify-pack', ...v, name], { cwd });
        expect([r.status, r.stderr, r.stdout], name).toEqual([
          g.status,
          g.stderr,
          g.stdout.toString(),
        ]);
      }
    }
    // git 2.39's wording, written out (the oracle above could change with git).
    expect(tool(['verify', 'nonexistent.pack'], { cwd }).stderr).toBe(
      "fatal: Cannot open existing pack file 'nonexistent.idx'\n",
    );
  });

  it('an empty zstd pack is named as empty, not read as a too-small index', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verify-empty-zpack-'));
    try {
      const file = path.join(dir, 'empty.zpack');
      fs.writeFileSync(file, '');
      const r = tool(['verify', 'empty.zpack'], { cwd: dir });
      expect([r.status, r.stderr]).toEqual([
        1,
        `error: ${file}: empty file, not a zstd pack at offset 0\n`,
      ]);
      const w = tool(['walk', 'empty.zpack'], { cwd: dir });
      expect([w.status, w.stderr]).toEqual([
        128,
        `fatal: ${file}: empty file, not a zstd pack at offset 0\n`,
      ]);
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  it('never changes the repository it reads', () => {
    const repo = useFixtureCopy('basic');
    const packDir = path.join(repo, '.git/objects/pack');
    const before = fs
      .readdirSync(packDir)
      .map((f) => [f, fs.readFileSync(path.join(packDir, f)).toString('hex')]);
    tool(['verify', '-v'], { cwd: repo });
    const after = fs
      .readdirSync(packDir)
      .map((f) => [f, fs.readFileSync(path.join(packDir, f)).toString('hex')]);
    expect(after).toEqual(before);
  });
});

describe('fixtures metadata', () => {
  it('sha256 really is sha256 (verify reads it with the repository format)', () => {
    expect(FIXTURES.sha256.objectFormat).toBe('sha256');
    const r = tool(['verify', '--json'], { cwd: fixturePath('sha256') });
    expect(r.status).toBe(0);
  });
});

describe('objects above core.bigFileThreshold are hashed while they stream', () => {
  it('the big-blob fixture verifies the same with a 1 MiB threshold', () => {
    const repo = fixturePath('big-blob');
    const env = { GIT_CONFIG_PARAMETERS: "'core.bigfilethreshold'='1m'" };
    const theirs = gitOk(['verify-pack', '-v', listPacks(repo)[0]!.replace(/\.pack$/, '.idx')], {
      cwd: repo,
    });
    const ours = tool(['verify', '-v'], { cwd: repo, env });
    expect(ours.stderr).toBe('');
    expect(ours.stdout.replace(/^.*\.pack: ok\n/m, '')).toBe(
      theirs.replace(/^.*\.pack: ok\n/m, ''),
    );
  });

  it('a damaged big blob is reported at its offset', () => {
    const pristine = fixturePath('big-blob');
    const big = entryOffsets(pristine, listPacks(pristine)[0]!.replace(/\.pack$/, '.idx')).find(
      (e) => e.size > 2 << 20 && e.depth === 0,
    )!;
    const { repo } = damaged('big-blob', (p) => {
      p[big.offset + 4000]! ^= 0xff;
      return { pack: p };
    });
    const env = { GIT_CONFIG_PARAMETERS: "'core.bigfilethreshold'='1m'" };
    expect(tool(['verify'], { cwd: pristine, env }).status).toBe(0);
    const r = tool(['verify'], { cwd: repo, env });
    expect(r.status).toBe(1);
    // The CRC check names the entry, the streaming inflate names where its data starts.
    expect(r.stderr).toContain(`CRC32 mismatch for entry (index`);
    expect(r.stderr).toMatch(
      new RegExp(`corrupt object data .* at offset ${big.offset + 4}|at offset ${big.offset}\n`),
    );
  });

  it('a 640 MiB blob is verified in bounded memory', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-bigverify-'));
    try {
      gitOk(['init', '-q', dir], { cwd: os.tmpdir() });
      const fd = fs.openSync(path.join(dir, 'zeros'), 'w');
      fs.ftruncateSync(fd, 640 << 20);
      fs.closeSync(fd);
      gitOk(['-c', 'core.bigFileThreshold=1g', 'add', 'zeros'], { cwd: dir });
      gitOk(['commit', '-qm', 'big'], { cwd: dir });
      gitOk(['repack', '-adq'], { cwd: dir });
      fs.rmSync(path.join(dir, 'zeros'));
      const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, 'verify'], {
        cwd: dir,
        encoding: 'utf8',
        env: gitEnv(),
      });
      expect(r.status).toBe(0);
      const kb = Number(r.stderr.trim().split('\n').pop());
      expect(kb).toBeGreaterThan(1000);
      expect(kb).toBeLessThan(200 * 1024);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
