/**
 * Issue 33: errors carry errno, syscall, path, file and offset as fields, and the `fatal:` line
 * is made from them once. The main error-producing commands on a truncated pack, a corrupt
 * entry, a truncated index and missing files: each message written out here in full, and each
 * names its file once and its offset once (never `at offset X at offset Y`, never a path twice).
 * Offsets come from git (`git verify-pack -v`) and from the file sizes, not from the tool.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { git } from './helpers/git.js';
import { tool, type ToolResult } from './helpers/tool.js';
import { GitRepackError, systemError, unwrappedSystemError } from '../src/errors.js';

const LEVELS = ['--compression=9', '--graph-compression=9', '-q'];

function packOf(repo: string): { pack: string; idx: string } {
  const dir = path.join(repo, '.git/objects/pack');
  const idx = path.join(
    dir,
    fs.readdirSync(dir).find((n) => n.endsWith('.idx'))!,
  );
  return { pack: idx.replace(/\.idx$/, '.pack'), idx };
}

function count(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** Each line of stderr names `file` once and says `at offset` at most once. */
function namesOnce(r: ToolResult, file: string): void {
  for (const line of r.stderr.split('\n').filter((l) => l !== '')) {
    expect(count(line, file), line).toBe(1);
    expect(count(line, 'at offset'), line).toBeLessThanOrEqual(1);
  }
}

function expectFatal(r: ToolResult, text: string, file: string, status = 128): void {
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status, stderr: text });
  namesOnce(r, file);
}

/** A non-delta entry of `type` that git lists (offset, whole size), and its header's length. */
function entryOf(
  idx: string,
  repo: string,
  type: string,
): { id: string; off: number; len: number; hl: number } {
  const f = git(['verify-pack', '-v', idx], { cwd: repo })
    .stdout.toString()
    .split('\n')
    .map((l) => l.split(/\s+/))
    .find((x) => x.length === 5 && x[1] === type && Number(x[3]) > 60)!;
  const off = Number(f[4]);
  const bytes = fs.readFileSync(idx.replace(/\.idx$/, '.pack'));
  let hl = 1;
  while ((bytes[off + hl - 1]! & 0x80) !== 0) hl++; // the type-and-size varint (git's unpack_object_header_buffer)
  return { id: f[0]!, off, len: Number(f[3]), hl };
}

describe('a truncated pack', () => {
  it('every command names the pack, its index and the trailer offset once', () => {
    const repo = useFixtureCopy('basic');
    const { pack, idx } = packOf(repo);
    fs.chmodSync(pack, 0o644);
    const size = Math.floor(fs.statSync(pack).size * 0.75);
    fs.truncateSync(pack, size);
    const text = `${pack}: pack trailer does not match the checksum recorded in ${idx} at offset ${size - 20}`;
    for (const args of [
      LEVELS,
      ['inspect'],
      ['walk'],
      ['--zstd', '-o', path.join(repo, 'x.zpack')],
    ])
      expectFatal(tool(args, { cwd: repo }), `fatal: ${text}\n`, pack);
    expectFatal(tool(['verify'], { cwd: repo }), `error: ${text}\n`, pack, 1);
  });
});

describe('a corrupt entry', () => {
  it("git's `packed object … is corrupt`, the pack and the offset once", () => {
    const repo = useFixtureCopy('basic');
    const { pack, idx } = packOf(repo);
    const e = entryOf(idx, repo, 'commit');
    fs.chmodSync(pack, 0o644);
    const bytes = fs.readFileSync(pack);
    for (let i = e.off + e.hl + 2; i < e.off + e.hl + 6; i++) bytes[i] = bytes[i]! ^ 0xff;
    fs.writeFileSync(pack, bytes);
    const say = (at: number, why: string): string =>
      `fatal: packed object ${e.id} (stored in ${pack}) is corrupt: corrupt object data (zlib: ${why}) at offset ${at} (commit entry)\n`;
    // Every command names the entry's offset, as git verify-pack -v lists it.
    const rewrite = tool(LEVELS, { cwd: repo });
    const why = /\(zlib: ([^)]+)\)/.exec(rewrite.stderr)?.[1] ?? 'none';
    expectFatal(rewrite, say(e.off, why), pack);
    expectFatal(tool(['walk', '--read-blobs'], { cwd: repo }), say(e.off, why), pack);
    const verify = tool(['verify'], { cwd: repo });
    expect(verify.status).toBe(1);
    expect(verify.stderr).toContain(
      `error: ${pack}: corrupt object data (zlib: ${why}) at offset ${e.off}\n`,
    );
    namesOnce(verify, pack);
  });
});

describe('a truncated index', () => {
  it('names the index and offset 0 once', () => {
    const repo = useFixtureCopy('basic');
    const { idx } = packOf(repo);
    fs.chmodSync(idx, 0o644);
    fs.truncateSync(idx, 500);
    const text = `${idx}: index file too small at offset 0`;
    for (const args of [LEVELS, ['inspect'], ['walk']])
      expectFatal(tool(args, { cwd: repo }), `fatal: ${text}\n`, idx);
    expectFatal(tool(['verify'], { cwd: repo }), `error: ${text}\n`, idx, 1);
  });
});

describe("missing files: git's `<what> '<path>': <strerror>`", () => {
  it('each command names the path once, in strerror’s words', () => {
    const repo = useFixtureCopy('basic');
    const gone = path.join(repo, 'gone');
    const cases: [string[], string, number][] = [
      [
        ['walk', 'gone.pack'],
        `fatal: cannot open '${gone}.pack': No such file or directory\n`,
        128,
      ],
      [
        ['zstd-import', 'gone.zpack'],
        `fatal: cannot open '${gone}.zpack': No such file or directory\n`,
        128,
      ],
      [
        ['hash-object', 'gone'],
        `fatal: could not open 'gone' for reading: No such file or directory\n`,
        128,
      ],
      [
        ['-C', gone, 'inspect'],
        `fatal: cannot change to '${gone}': No such file or directory\n`,
        128,
      ],
      [
        ['--zstd', '-o', path.join(gone, 'x.zpack')],
        `error: cannot write '${path.join(gone, 'x.zpack')}': No such file or directory\n`,
        129,
      ],
    ];
    for (const [args, text, status] of cases) {
      const r = tool(args, { cwd: repo });
      expect({ args, status: r.status, stderr: r.stderr }).toEqual({ args, status, stderr: text });
      expect(count(r.stderr, 'gone'), r.stderr).toBe(1);
    }
  });

  it('a write that fails names the file it wrote once (the fault harness fails it as the system would)', () => {
    const repo = useFixtureCopy('basic');
    const r = tool(LEVELS, { cwd: repo, env: { GIT_REPACK_TS_FAULT: 'write:1:enospc' } });
    expect(r.status).toBe(128);
    const m =
      /^fatal: writing the new pack (\S+): write '(\S+)': No space left on device; nothing was changed\n$/.exec(
        r.stderr,
      );
    expect(m, r.stderr).not.toBeNull();
    expect(count(r.stderr, m![2]!)).toBe(1);
  });
});

describe('the error values', () => {
  it('a Node system error becomes fields and git’s words, the original as cause', () => {
    const missing = path.join(os.tmpdir(), `gone-${process.pid}`);
    let thrown: unknown;
    try {
      fs.readFileSync(missing);
    } catch (e) {
      thrown = e;
    }
    const e = unwrappedSystemError(thrown) as GitRepackError;
    expect(e).toBeInstanceOf(GitRepackError);
    expect({ ...e, message: e.message }).toMatchObject({
      code: 'io',
      errno: 'ENOENT',
      syscall: 'open',
      path: missing,
      message: `open '${missing}': No such file or directory`,
    });
    expect(e.cause).toBe(thrown);
    const wrapped = systemError('io', 'cannot read', thrown, 'x.idx') as GitRepackError;
    expect(wrapped.message).toBe(`cannot read 'x.idx': No such file or directory`);
    expect(wrapped.message).not.toContain((thrown as Error).message);
    expect({ errno: wrapped.errno, file: wrapped.file, cause: wrapped.cause }).toEqual({
      errno: 'ENOENT',
      file: 'x.idx',
      cause: thrown,
    });
  });

  it('an error of ours is not wrapped again, and what is no system error passes through', () => {
    const ours = new GitRepackError('io', 'x', { errno: 'ENOENT', syscall: 'open', path: 'p' });
    expect(unwrappedSystemError(ours)).toBe(ours);
    const bug = new TypeError('bug');
    expect(systemError('io', 'cannot read', bug, 'p')).toBe(bug);
  });
});
