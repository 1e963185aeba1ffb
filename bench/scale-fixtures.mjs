#!/usr/bin/env node
// Scale fixtures for issue 20, written by `git fast-import` with pinned identity, dates and
// config, so that the same parameters give the same objects. Usage:
//   node bench/scale-fixtures.mjs big     <dir> [blobs=90] [blobMiB=48] [zlibLevel=0]
//   node bench/scale-fixtures.mjs many    <dir> [commits=300000] [dirs=200] [filesPerDir=100] [changesPerCommit=3]
//   node bench/scale-fixtures.mjs bigblob <dir> [MiB=1536] [zlibLevel=0]
// big:     one pack of incompressible blobs of tens of MiB (the default, 90 x 48 MiB, is a
//          4.2 GiB pack: its .idx needs the 64-bit offset table), one blob per commit, spread
//          over a few directories, with a small text file changed every tenth commit.
// many:    deep linear history over a wide tree (dirs x filesPerDir files); each commit changes
//          changesPerCommit small text files in as many directories, so it adds that many blobs
//          and subtrees, a root tree and the commit (the default is 2.4 million objects).
// bigblob: one commit holding one incompressible blob of the given size (the whole-object bound).
// The noise blobs are written at pack.compression=0 unless told otherwise: zlib stores
// incompressible data at any level (stored blocks either way), and deflating it costs 3-7 MB/s
// on the 2-core benchmark machine (an hour for the 4.2 GiB pack) for the same bytes.
// Each makes a bare repository <dir> with refs/heads/main and exactly one pack (checked).
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const EPOCH = 1_700_000_000; // the tests' pinned clock (test/helpers/git.ts)
const MiB = 1 << 20;
export const gitEnv = {
  ...Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_') || k === 'GIT_EXEC_PATH'),
  ),
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LANG: 'C',
  TZ: 'UTC',
};

/** Deterministic incompressible bytes: AES-128-CTR over zeros, keyed by a label. */
function noise(label, size) {
  const key = crypto.createHash('sha256').update(label).digest().subarray(0, 16);
  const cipher = crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16));
  return { cipher, size };
}

/** A fast-import stream writer: small pieces gathered into 1 MiB writes, with backpressure. */
class Stream {
  constructor(child) {
    this.out = child.stdin;
    this.pending = [];
    this.pendingBytes = 0;
  }
  async write(buf) {
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes >= MiB) await this.flush();
  }
  async flush() {
    const chunk = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    if (!this.out.write(chunk)) await new Promise((r) => this.out.once('drain', r));
  }
  async text(s) {
    await this.write(Buffer.from(s));
  }
  async blob(mark, data) {
    await this.text(`blob\nmark :${mark}\ndata ${data.length}\n`);
    await this.write(data);
    await this.text('\n');
  }
  async noiseBlob(mark, label, size) {
    await this.text(`blob\nmark :${mark}\ndata ${size}\n`);
    const { cipher } = noise(label, size);
    const zeros = Buffer.alloc(4 * MiB);
    for (let done = 0; done < size; done += zeros.length) {
      await this.write(cipher.update(zeros.subarray(0, Math.min(zeros.length, size - done))));
    }
    await this.text('\n');
  }
  async commit(mark, tick, message, parentMark, changes) {
    const who = (role) => `${role} A U Thor <author@example.com> ${EPOCH + tick * 60} +0000\n`;
    const msg = Buffer.from(message);
    let s = `commit refs/heads/main\nmark :${mark}\n${who('author')}${who('committer')}data ${msg.length}\n${message}\n`;
    if (parentMark) s += `from :${parentMark}\n`;
    for (const [p, m] of changes) s += `M 100644 :${m} ${p}\n`;
    await this.text(s + '\n');
  }
}

async function fastImport(dir, body, level) {
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', dir], { env: gitEnv });
  // Noise blobs go over --big-file-threshold, so fast-import streams them and does not try each
  // as a delta of the one before (a delta index of tens of MiB: 8 MB/s of CPU).
  const noise = level === undefined ? [] : ['-c', `pack.compression=${level}`];
  const stream = level === undefined ? [] : ['--big-file-threshold=1m'];
  // fast-import grows and shrinks its heap by brk for every few objects, and a brk can cost
  // 170 us on a VM (a 21k-object \`many\` took 67 s, 60 of them in the kernel): glibc keeps 64 MiB
  // at the top of the heap instead. The fixture is the same; only git's own malloc changes.
  const fastImportEnv = {
    ...gitEnv,
    MALLOC_TOP_PAD_: String(64 << 20),
    MALLOC_TRIM_THRESHOLD_: String(128 << 20),
  };
  const child = spawn(
    'git',
    ['--git-dir', dir, ...noise, 'fast-import', '--quiet', '--done', ...stream],
    { env: fastImportEnv, stdio: ['pipe', 'inherit', 'inherit'] },
  );
  const exited = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}`)),
    );
  });
  const s = new Stream(child);
  await body(s);
  await s.text('done\n');
  await s.flush();
  child.stdin.end();
  await exited;
  let packs = fs.readdirSync(path.join(dir, 'objects/pack')).filter((f) => f.endsWith('.pack'));
  if (packs.length !== 1) {
    // fast-import starts a new pack only at --max-pack-size (unlimited by default); if it did,
    // one pack as git would make it.
    execFileSync('git', ['--git-dir', dir, 'repack', '-a', '-d', '-q'], { env: gitEnv });
    packs = fs.readdirSync(path.join(dir, 'objects/pack')).filter((f) => f.endsWith('.pack'));
  }
  const pack = path.join(dir, 'objects/pack', packs[0]);
  const count = execFileSync('git', ['--git-dir', dir, 'count-objects', '-v'], {
    env: gitEnv,
    encoding: 'utf8',
  });
  return { pack, bytes: fs.statSync(pack).size, objects: Number(/in-pack: (\d+)/.exec(count)[1]) };
}

/** (a) incompressible blobs of tens of MiB, one per commit. */
export function makeBig(dir, blobs = 90, blobMiB = 48, level = 0) {
  return fastImport(
    dir,
    async (s) => {
      let mark = 0;
      let parent = 0;
      let readme = 0;
      for (let i = 0; i < blobs; i++) {
        const changes = [];
        const blob = ++mark;
        await s.noiseBlob(blob, `big-${i}`, blobMiB * MiB);
        changes.push([`media/d${i % 8}/clip-${String(i).padStart(4, '0')}.bin`, blob]);
        if (i % 10 === 0) {
          readme = ++mark;
          await s.blob(readme, Buffer.from(`Media set, revision ${i}\n`.repeat(20)));
          changes.push(['README', readme]);
        }
        const c = ++mark;
        await s.commit(c, i, `Add clip ${i}`, parent, changes);
        parent = c;
      }
    },
    level,
  );
}

/** (b) deep history over a wide tree of small text files. */
export function makeMany(
  dir,
  commits = 300_000,
  dirs = 200,
  filesPerDir = 100,
  changesPerCommit = 3,
) {
  return fastImport(dir, async (s) => {
    let mark = 0;
    let parent = 0;
    // A small deterministic PRNG (xorshift32) for which files change and what they say.
    let x = 0x9e3779b9;
    const rand = (n) => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      return x % n;
    };
    const words = [
      'alpha',
      'beta',
      'gamma',
      'delta',
      'epsilon',
      'zeta',
      'eta',
      'theta',
      'iota',
      'kappa',
      'lambda',
      'mu',
    ];
    const line = () => Array.from({ length: 8 }, () => words[rand(words.length)]).join(' ');
    // The first commit fills the whole tree; every later one changes a few files.
    const first = [];
    for (let d = 0; d < dirs; d++)
      for (let f = 0; f < filesPerDir; f++) {
        const m = ++mark;
        await s.blob(m, Buffer.from(`file ${d}/${f}\n${line()}\n`));
        first.push([`d${String(d).padStart(3, '0')}/f${String(f).padStart(3, '0')}.txt`, m]);
      }
    parent = ++mark;
    await s.commit(parent, 0, 'Initial tree', 0, first);
    for (let c = 1; c < commits; c++) {
      const changes = [];
      const base = rand(dirs); // distinct directories, so no blob of a commit is left dangling
      for (let k = 0; k < changesPerCommit; k++) {
        const d = (base + k) % dirs;
        const f = rand(filesPerDir);
        const m = ++mark;
        await s.blob(m, Buffer.from(`file ${d}/${f} at ${c}\n${line()}\n${line()}\n`));
        changes.push([`d${String(d).padStart(3, '0')}/f${String(f).padStart(3, '0')}.txt`, m]);
      }
      const cm = ++mark;
      await s.commit(cm, c, `Change ${c}`, parent, changes);
      parent = cm;
    }
  });
}

/** (c) one incompressible blob of the given size. */
export function makeBigBlob(dir, mib = 1536, level = 0) {
  return fastImport(
    dir,
    async (s) => {
      await s.noiseBlob(1, 'bigblob', mib * MiB);
      await s.commit(2, 0, 'One big blob', 0, [['big.bin', 1]]);
    },
    level,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [kind, dir, ...nums] = process.argv.slice(2);
  const make = { big: makeBig, many: makeMany, bigblob: makeBigBlob }[kind];
  if (!make || !dir) {
    console.error('usage: node bench/scale-fixtures.mjs (big|many|bigblob) <dir> [sizes...]');
    process.exit(129);
  }
  const t0 = Date.now();
  const r = await make(path.resolve(dir), ...nums.map(Number));
  console.log(
    `${kind}: ${r.objects} objects, pack ${(r.bytes / 2 ** 30).toFixed(3)} GiB (${r.bytes} bytes), ${((Date.now() - t0) / 1000).toFixed(1)} s: ${r.pack}`,
  );
}
