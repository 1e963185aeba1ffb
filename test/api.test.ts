/**
 * The library API in process (src/index.ts, what the package exports): its errors, its options,
 * config applied as in the command (the command's --json is the oracle, git the judge of every
 * repository touched), cancellation, and silence. test/package.test.ts runs the installed package.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GitRepackError, hashObject, inspect, repack, verify, walk } from '../src/index.js';
import { fixturePath } from './fixtures/index.js';
import { useFixtureCopy } from './helpers/fixture-copy.js';
import { fsckStrict, gitOk, listPacks, objectSet } from './helpers/git.js';
import { tool, toolOk } from './helpers/tool.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** The rejection of a promise, which must be a GitRepackError. */
async function rejection(p: Promise<unknown>): Promise<GitRepackError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(GitRepackError);
  return e as GitRepackError;
}

/** The state git sees: packs by name, every object, and fsck's verdict. */
function state(repo: string): unknown {
  return {
    packs: listPacks(repo).map((p) => path.basename(p)),
    objects: objectSet(repo),
    fsck: fsckStrict(repo),
  };
}

describe('library API errors', () => {
  it('is one class with a stable code, the file, offset and object concerned', async () => {
    const missing = path.join(fixturePath('basic'), 'no-such-directory');
    const e = await rejection(inspect(missing));
    expect(e.code).toBe('not-a-repository');
    expect(e.file).toBe(missing);
    expect(e.name).toBe('GitRepackError');

    const plain = fs.mkdtempSync(
      path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'api-not-a-repo-'),
    );
    try {
      expect((await rejection(repack(plain))).code).toBe('not-a-repository');
    } finally {
      fs.rmSync(plain, { recursive: true });
    }
    expect((await rejection(hashObject(path.join(missing, 'file.txt')))).code).toBe('io');
    // A mistyped repository inside another must not select the one around it.
    const around = useFixtureCopy('basic');
    const objects = objectSet(around);
    const file = path.join(around, 'new.txt');
    fs.writeFileSync(file, 'not for the repository around\n');
    const typo = await rejection(
      hashObject(file, { write: true, repository: path.join(around, 'no-such-directory') }),
    );
    expect([typo.code, typo.file]).toEqual([
      'not-a-repository',
      path.join(around, 'no-such-directory'),
    ]);
    expect(objectSet(around)).toEqual(objects);
    const e2 = new GitRepackError('missing-object', 'object 1234 not found', {
      file: 'f',
      offset: 12,
      objectId: '1234',
    });
    expect([e2.code, e2.file, e2.offset, e2.objectId]).toEqual(['missing-object', 'f', 12, '1234']);
  });

  it('refuses bad options as usage errors, before touching anything', async () => {
    const repo = fixturePath('basic'); // pristine: every call below must fail before writing
    expect((await rejection(repack(repo, { graphCompression: 10 }))).code).toBe('usage');
    expect((await rejection(repack(repo, { compression: 'auto' }))).code).toBe('usage');
    expect((await rejection(repack(repo, { fsck: 'some' as 'full' }))).code).toBe('usage');
    expect((await rejection(repack(repo, { dryrun: true } as object))).message).toBe(
      "repack: unknown option 'dryrun'",
    );
    expect((await rejection(verify([]))).code).toBe('usage');
    expect(
      (
        await rejection(
          repack(repo, {
            dryRun: true,
            keepPacks: ['pack-0000000000000000000000000000000000000000'],
          }),
        )
      ).code,
    ).toBe('usage');
  });

  it('names a bad option as the caller wrote it, not as the command line flag (issue 34)', async () => {
    const repo = fixturePath('basic');
    const message = async (o: object) =>
      (await rejection(repack(repo, o as Parameters<typeof repack>[1]))).message;
    expect(await message({ graphCompression: 11 })).toBe(
      "graphCompression expects a zlib level from -1 to 9 (or auto, or keep), not '11'",
    );
    expect(await message({ blobCompression: [5] })).toBe(
      "blobCompression expects a zlib level from -1 to 9 (or auto, or keep), not '5'",
    );
    expect(await message({ compression: 'auto' })).toBe(
      'auto is a level for one type or for graphCompression, not for every type (compression)',
    );
    expect(await message({ fsck: true })).toBe(
      "fsck expects 'changed', 'full' or 'connectivity' (or false), not 'true'",
    );
    expect(await message({ keepPacks: 'pack-1' })).toBe('keepPacks expects pack names');
    expect(await message({ writeBitmapIndex: 'yes' })).toBe(
      'writeBitmapIndex expects true or false',
    );
  });

  it('rejects with code aborted when the signal fires, and the repository stays as it was', async () => {
    const repo = useFixtureCopy('multi-pack');
    const before = state(repo);
    const aborted = AbortSignal.abort();
    expect((await rejection(inspect(repo, { signal: aborted }))).code).toBe('aborted');
    const controller = new AbortController();
    const phases: string[] = [];
    const e = await rejection(
      repack(repo, {
        graphCompression: 0,
        signal: controller.signal,
        onProgress: (phase) => {
          phases.push(phase);
          if (phase === 'writing objects') controller.abort();
        },
      }),
    );
    expect(e.code).toBe('aborted');
    expect(phases).toContain('writing objects');
    expect(state(repo)).toEqual(before);
    expect(
      fs.readdirSync(path.dirname(listPacks(repo)[0]!)).filter((f) => f.startsWith('tmp_')),
    ).toEqual([]);
  });

  it('a damaged pack is a result, not an error', async () => {
    const repo = useFixtureCopy('basic');
    const pack = listPacks(repo)[0]!;
    const bytes = fs.readFileSync(pack);
    fs.writeFileSync(pack, bytes.subarray(0, bytes.length >> 1));
    const r = await verify(pack);
    expect(r.ok).toBe(false);
    expect(r.packs[0]!.problems[0]!.file).toBe(pack);
    const cli = tool(['verify', '--json', pack], { cwd: repo });
    expect(cli.status).toBe(1);
    expect(r).toStrictEqual(JSON.parse(cli.stdout));
    const gone = await verify(path.join(repo, 'nothing.pack'));
    expect(gone.packs[0]).toMatchObject({ pack: path.join(repo, 'nothing.pack'), ok: false });
  });
});

describe('library API options', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    delete process.env.GIT_DIR;
  });

  it('applies config keys as the command does (the same --json for the same repository)', async () => {
    const repo = useFixtureCopy('basic');
    gitOk(['config', 'pack.graphCompression', '0'], { cwd: repo });
    gitOk(['config', 'pack.blobCompression', '9'], { cwd: repo });
    const api = await repack(repo, { dryRun: true, tagCompression: 1 });
    expect(api.levels).toEqual({ commit: 0, tree: 0, blob: 9, tag: 1 });
    expect(api).toStrictEqual(
      JSON.parse(toolOk(['--dry-run', '--json', '--tag-compression=1'], { cwd: repo })),
    );
  });

  it('takes the path it is given over GIT_DIR in the environment', async () => {
    process.env.GIT_DIR = path.join(fixturePath('ref-delta'), '.git');
    const r = await inspect(fixturePath('basic'));
    expect(r.packs.map((p) => p.pack)).toEqual(listPacks(fixturePath('basic')));
  });

  it('writes nothing to stdout or stderr, reports progress through the callback', async () => {
    const repo = useFixtureCopy('keep');
    const before = objectSet(repo);
    const out = vi.spyOn(process.stdout, 'write');
    const err = vi.spyOn(process.stderr, 'write');
    const progress: string[] = [];
    const r = await repack(repo, {
      blobCompression: 0,
      onProgress: (phase) => progress.push(phase),
    });
    await inspect(repo);
    await walk(repo);
    await verify(listPacks(repo));
    expect(out).not.toHaveBeenCalled();
    expect(err).not.toHaveBeenCalled();
    expect(progress).toContain('writing objects');
    expect(r.keptPacks).toHaveLength(1);
    expect(objectSet(repo)).toEqual(before);
    expect(fsckStrict(repo)).toEqual({ status: 0, output: '' });
  });

  it('no module below cli/ touches process.stdout, stderr, exit or argv', () => {
    const offenders: string[] = [];
    const visit = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (p !== path.join(SRC, 'cli')) visit(p);
        } else if (p.endsWith('.ts')) {
          fs.readFileSync(p, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (/process\.(stdout|stderr|stdin|exit|exitCode|argv)\b|console\./.test(line))
                offenders.push(`${path.relative(SRC, p)}:${i + 1}: ${line.trim()}`);
            });
        }
      }
    };
    visit(SRC);
    expect(offenders).toEqual([]);
  });
});

describe('the documented error fields (docs/api.md)', () => {
  it('`detail` is the bare reason: the file and offset are in their own fields only', async () => {
    const repo = useFixtureCopy('basic');
    const pack = listPacks(repo)[0]!;
    const bytes = fs.readFileSync(pack);
    bytes[40]! ^= 0xff; // inside the first entry's zlib data
    fs.writeFileSync(pack, bytes);
    const e = await rejection(walk(repo));
    expect(e.code).toBe('bad-object');
    expect([e.file, typeof e.offset]).toEqual([pack, 'number']);
    expect(e.message).toContain(pack);
    expect(e.detail).not.toContain(pack);
    expect(e.detail).not.toMatch(/at offset/);
    // A truncated index, as git says it ("index file too small"), read through the library too.
    const other = useFixtureCopy('basic');
    const idx = listPacks(other)[0]!.replace(/\.pack$/, '.idx');
    fs.truncateSync(idx, 10);
    const t = await rejection(walk(other));
    expect([t.code, t.file, t.offset, t.detail]).toEqual([
      'bad-idx',
      idx,
      0,
      'index file too small',
    ]);
  });

  it('documents every code the source can produce', () => {
    const errors = fs.readFileSync(path.join(SRC, 'errors.ts'), 'utf8');
    const union = errors.slice(
      errors.indexOf('export type ErrorCode'),
      errors.indexOf('export interface ErrorWhere'),
    );
    const codes = [...union.matchAll(/\| '([a-z-]+)'/g)].map((m) => m[1]!);
    expect(codes).toContain('dubious-ownership');
    // Every code used where an error is made is one of these.
    const used = new Set<string>();
    const walkDir = (d: string): void => {
      for (const n of fs.readdirSync(d, { withFileTypes: true })) {
        const f = path.join(d, n.name);
        if (n.isDirectory()) walkDir(f);
        else if (f.endsWith('.ts'))
          for (const m of fs
            .readFileSync(f, 'utf8')
            .matchAll(/(?:new (?:GitError|GitRepackError)|corrupt)\(\s*'([a-z-]+)'/g))
            used.add(m[1]!);
      }
    };
    walkDir(SRC);
    expect(used.size).toBeGreaterThan(10); // the search finds the sites
    expect([...used].filter((c) => !codes.includes(c))).toEqual([]);
    const docs = fs.readFileSync(path.join(SRC, '..', 'docs', 'api.md'), 'utf8');
    const row = docs.split('\n').find((l) => l.startsWith('| `code` |'))!;
    expect(codes.filter((c) => !row.includes(`\`${c}\``))).toEqual([]);
  });
});
