/**
 * zstd on each supported Node.js line (issue 34): node:zlib's own zstd where it has dictionaries
 * (22.19+, 24.6+), zstd-napi where it does not (Node 20), and where neither is there one fatal
 * line that says what is missing and how to get it. Each line is run as a binary of its own
 * (scripts/node-lines.mjs), whatever line runs this file. The second implementation is libzstd
 * through zstd-napi: node:zlib's frames must be its frames byte for byte, and a zstd pack written
 * with node:zlib alone must be the very file zstd-napi writes; git checks every import.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { nodeBinary, type NodeLine } from '../scripts/node-lines.mjs';
import { fixturePath } from './fixtures/index.js';
import { fsckStrict, gitEnv, gitOk, gitOkBuffer, objectSet } from './helpers/git.js';
import { BUILT_IN_ZSTD, zstdMissing } from './helpers/node-zstd.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BUILT_IN = BUILT_IN_ZSTD;
const LINES = Object.keys(BUILT_IN).map(Number) as NodeLine[];

function tmpDir(): string {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zstd-bindings-')));
  onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The built tool copied where no node_modules can be found: no zstd-napi, as after `npm install -g` of the tarball alone. */
function bareCopy(): string {
  const bare = tmpDir();
  for (const d of ['bin', 'dist'])
    fs.cpSync(path.join(ROOT, d), path.join(bare, d), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(bare, 'package.json'));
  return bare;
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The tool in `root` (this clone, or a bare copy) run by node `line`. */
function toolOn(
  line: NodeLine,
  root: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Run {
  const r = spawnSync(nodeBinary(line), [path.join(root, 'bin', 'git-repack-ts.js'), ...args], {
    cwd,
    env: gitEnv(env),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function toolOnOk(
  line: NodeLine,
  root: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): string {
  const r = toolOn(line, root, args, cwd, env);
  expect({ args, status: r.status, stderr: r.stderr }).toEqual({ args, status: 0, stderr: '' });
  return r.stdout;
}

function version(line: NodeLine): string {
  return spawnSync(nodeBinary(line), ['--version'], { encoding: 'utf8' }).stdout.trim();
}

/** What the codec module of `root`'s dist says on node `line`: the binding it uses, or why there is none. */
function bindingOn(line: NodeLine, root: string): { binding: string | null; why: string | null } {
  const script =
    'const m = await import(process.argv[1]); console.log(JSON.stringify({ binding: m.zstdBinding() ?? null, why: m.zstdUnavailable() ?? null }));';
  const r = spawnSync(
    nodeBinary(line),
    ['--input-type=module', '-e', script, path.join(root, 'dist', 'codec', 'zstd.js')],
    { encoding: 'utf8' },
  );
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as { binding: string | null; why: string | null };
}

/** The line written when neither binding is there, on Node 20. */
function missingOn20(): string {
  return zstdMissing(version(20));
}

/** Deterministic bytes zstd about halves (hex digits of a keyed stream). */
function text(label: string, size: number): Buffer {
  const key = crypto.createHash('sha256').update(label).digest().subarray(0, 16);
  return Buffer.from(
    crypto
      .createCipheriv('aes-128-ctr', key, Buffer.alloc(16))
      .update(Buffer.alloc(size / 2))
      .toString('hex'),
  );
}

/** A bare repository holding `basic`'s objects and one 3 MiB text blob (an entry the export streams). */
function repoWithLargeBlob(): string {
  const dir = tmpDir();
  gitOk(['clone', '-q', '--bare', '--no-local', fixturePath('basic'), dir], { cwd: os.tmpdir() });
  fs.writeFileSync(path.join(dir, 'big.txt'), text('large', 3 << 20));
  const id = gitOk(['hash-object', '-w', 'big.txt'], { cwd: dir }).trim();
  fs.rmSync(path.join(dir, 'big.txt'));
  gitOk(['tag', 'large', id], { cwd: dir });
  gitOk(['repack', '-adq'], { cwd: dir });
  return dir;
}

// Each line's binary, fetched from the registry the first time (52 MB each): before any test's clock starts.
beforeAll(() => {
  for (const line of LINES) nodeBinary(line);
}, 300_000);

describe('which zstd each Node.js line uses', () => {
  it('node:zlib on 22 and 24 (with zstd-napi beside it or not), zstd-napi on 20, and on 20 without it what is missing and how to get it', () => {
    const bare = bareCopy();
    for (const line of LINES) {
      const zstd = spawnSync(nodeBinary(line), ['-p', 'process.versions.zstd'], {
        encoding: 'utf8',
      }).stdout.trim();
      const napi = bindingOn(line, ROOT);
      const alone = bindingOn(line, bare);
      if (BUILT_IN[line]) {
        expect({ line, napi, alone }).toEqual({
          line,
          napi: { binding: `node:zlib ${zstd}`, why: null },
          alone: { binding: `node:zlib ${zstd}`, why: null },
        });
      } else {
        expect({ line, napi: napi.binding?.replace(/ [\d.]+$/, '') }).toEqual({
          line,
          napi: 'zstd-napi',
        });
        expect({ line, alone }).toEqual({ line, alone: { binding: null, why: missingOn20() } });
      }
    }
  });

  it('zstd-napi installed but not built: said as such on Node 20, not as missing', () => {
    const bare = bareCopy();
    const napi = path.join(bare, 'node_modules', 'zstd-napi');
    fs.mkdirSync(napi, { recursive: true });
    for (const f of ['package.json', 'binding.js'])
      fs.copyFileSync(
        path.join(fs.realpathSync(path.join(ROOT, 'node_modules', 'zstd-napi')), f),
        path.join(napi, f),
      );
    const { binding, why } = bindingOn(20, bare);
    expect(binding).toBeNull();
    expect(why).toMatch(
      /^zstd is not available: this Node\.js \(v20\.[\d.]+\) has no zstd in node:zlib \(22\.15 and later have\), and zstd-napi did not load \(Cannot find module '\.\/build\/Release\/binding\.node'\); use Node\.js 22\.19 or later, or `npm install -g zstd-napi` beside git-repack-ts$/,
    );
  });
});

describe('node:zlib against zstd-napi', () => {
  it('the same frames byte for byte, each read by the other whole and streamed, and the same damaged frames refused', () => {
    // The objects of a fixture, and what the export streams or finds hard: large text, noise, one byte, nothing.
    const all = gitOkBuffer(['cat-file', '--batch-all-objects', '--batch'], {
      cwd: fixturePath('basic'),
    });
    const samples: Buffer[] = [];
    for (let at = 0; at < all.length;) {
      const nl = all.indexOf(10, at);
      const size = Number(all.subarray(at, nl).toString('latin1').split(' ')[2]);
      samples.push(all.subarray(nl + 1, nl + 1 + size));
      at = nl + 1 + size + 1;
    }
    const noise = crypto
      .createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16))
      .update(Buffer.alloc(250_000));
    samples.push(
      text('t', 300_000),
      noise,
      text('big', 3 << 20),
      Buffer.from('x'),
      Buffer.alloc(0),
    );
    const file = path.join(tmpDir(), 'samples');
    fs.writeFileSync(
      file,
      Buffer.concat(
        samples.flatMap((s) => [
          Buffer.from([
            s.length >>> 24,
            (s.length >>> 16) & 255,
            (s.length >>> 8) & 255,
            s.length & 255,
          ]),
          s,
        ]),
      ),
    );
    for (const line of LINES.filter((l) => BUILT_IN[l])) {
      const r = spawnSync(
        nodeBinary(line),
        [path.join(ROOT, 'test', 'helpers', 'zstd-compare.mjs'), path.join(ROOT, 'dist'), file],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      );
      expect({ line, stderr: r.stderr, status: r.status }).toEqual({ line, stderr: '', status: 0 });
      const out = JSON.parse(r.stdout) as {
        frames: number;
        differ: string[];
        unread: string[];
        streamed: number;
        streamDiffer: string[];
        streamUnread: string[];
        refused: Record<string, boolean>;
      };
      // 4 levels by 3 dictionary choices; one level for samples over 64 KiB; those over 200 000 bytes streamed too.
      const large = samples.filter((s) => s.length > 65536).length;
      expect(out.frames).toBe((samples.length - large) * 12 + large * 3);
      expect(out.streamed).toBe(samples.filter((s) => s.length >= 200_000).length * 3);
      expect({
        line,
        differ: out.differ,
        unread: out.unread,
        streamDiffer: out.streamDiffer,
        streamUnread: out.streamUnread,
      }).toEqual({ line, differ: [], unread: [], streamDiffer: [], streamUnread: [] });
      expect(Object.keys(out.refused)).toHaveLength(12);
      expect(Object.entries(out.refused).filter(([, ok]) => !ok)).toEqual([]);
    }
  }, 240_000);

  it('a zstd pack exported with node:zlib alone is the file zstd-napi writes; Node 20 reads it, and node:zlib reads zstd-napi’s', () => {
    const src = repoWithLargeBlob();
    const bare = bareCopy();
    const out = tmpDir();
    const napiFile = path.join(out, 'napi.zpack');
    toolOnOk(20, ROOT, ['-q', '--zstd=10', '-o', napiFile], src);
    const napiBytes = fs.readFileSync(napiFile);
    const objects = objectSet(src);
    for (const line of LINES.filter((l) => BUILT_IN[l])) {
      const file = path.join(out, `node${line}.zpack`);
      toolOnOk(line, bare, ['-q', '--zstd=10', '-o', file], src);
      expect({ line, same: fs.readFileSync(file).equals(napiBytes) }).toEqual({ line, same: true });
      // zstd-napi's file read by node:zlib alone: every object re-hashed, walked, imported.
      expect(toolOnOk(line, bare, ['verify', '-v', napiFile], src)).toContain(`${napiFile}: ok`);
      const walk = JSON.parse(
        toolOnOk(line, bare, ['walk', '--json', '--read-blobs', napiFile], src),
      ) as Record<string, number>;
      expect(walk.missing).toBe(0);
      expect(walk.commits! + walk.trees! + walk.blobs! + walk.tags!).toBe(
        Number(gitOk(['rev-list', '--objects', '--all', '--count'], { cwd: src }).trim()),
      );
      const target = path.join(out, `target${line}`);
      gitOk(['init', '-q', '--bare', target], { cwd: out });
      toolOnOk(line, bare, ['zstd-import', '-q', napiFile], target);
      expect(objectSet(target)).toEqual(objects);
      expect(fsckStrict(target).status).toBe(0);
    }
    // node:zlib's file (the same bytes) read by Node 20's zstd-napi.
    const target = path.join(out, 'target20');
    gitOk(['init', '-q', '--bare', target], { cwd: out });
    toolOnOk(20, ROOT, ['zstd-import', '-q', path.join(out, 'node24.zpack')], target);
    expect(objectSet(target)).toEqual(objects);
  }, 240_000);
});

describe('without zstd, a zstd pack is not corrupt', () => {
  it('verify, walk and zstd-import: one fatal line naming the file, what is missing and how to get it, exit 128, nothing changed', () => {
    const src = fixturePath('basic');
    const dir = tmpDir();
    const file = path.join(dir, 'x.zpack');
    toolOnOk(20, ROOT, ['-q', '--zstd', '-o', file], src);
    const target = path.join(dir, 'target');
    gitOk(['init', '-q', '--bare', target], { cwd: dir });
    const before = objectSet(target);
    const bare = bareCopy();
    // Turned off in this clone (GIT_REPACK_TS_NO_ZSTD=1), and really missing: Node 20 with no zstd-napi.
    const cases: [string, string, Record<string, string>][] = [
      [
        ROOT,
        'zstd is not available: disabled by GIT_REPACK_TS_NO_ZSTD=1',
        { GIT_REPACK_TS_NO_ZSTD: '1' },
      ],
      [bare, missingOn20(), {}],
    ];
    for (const [root, why, env] of cases) {
      for (const [args, cwd] of [
        [['verify', file], src],
        [['verify', '-v', file], src],
        [['walk', file], src],
        [['walk', '--read-blobs', '--json', file], src],
        [['zstd-import', file], target],
      ] as const) {
        const r = toolOn(20, root, [...args], cwd, env);
        expect({ args, r }).toEqual({
          args,
          r: { status: 128, stdout: '', stderr: `fatal: cannot read ${file}: ${why}\n` },
        });
      }
      // The export says the same, without a file to name.
      const e = toolOn(20, root, ['--zstd', '-o', path.join(dir, 'never.zpack')], src, env);
      expect(e).toEqual({ status: 128, stdout: '', stderr: `fatal: ${why}\n` });
    }
    expect(fs.existsSync(path.join(dir, 'never.zpack'))).toBe(false);
    expect(objectSet(target)).toEqual(before);
  }, 120_000);
});
