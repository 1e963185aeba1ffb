import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { constants, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { deflateOnce } from '../src/codec/deflate-once.js';
import { SHA1, hashObjectBuffer } from '../src/hash/algo.js';
import { FIXED_HUFFMAN } from '../src/repack/levels.js';
import { deflateAt } from '../src/repack/deflate.js';
import { removeLoose } from '../src/store/packdir.js';
import { gitOk, lines, objectSet } from './helpers/git.js';

/** Inputs of every shape a pack entry has: empty, tiny, text, noise, mixed, past 64 KiB. */
function inputs(): Buffer[] {
  const text = Buffer.from('tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n'.repeat(300));
  const out = [Buffer.alloc(0), Buffer.from('x'), text, crypto.randomBytes(5000)];
  out.push(Buffer.concat([crypto.randomBytes(70000), Buffer.alloc(70000, 97)]));
  for (let i = 0; i < 40; i++) {
    const n = (i * 7919) % 90000;
    const b = Buffer.alloc(n);
    for (let j = 0; j < n; j++) b[j] = (j * 31 + (j >> (i % 7))) % (3 + i);
    out.push(b);
  }
  return out;
}

describe('the bytes of a deflate without its stream object', () => {
  it("are zlib's deflateSync at every level and with fixed Huffman codes", () => {
    for (const data of inputs()) {
      for (let level = 1; level <= 9; level++) {
        const want = deflateSync(data, { level });
        expect(deflateAt(data, level).equals(want), `level ${level}, ${data.length} bytes`).toBe(
          true,
        );
      }
      const fixed = deflateSync(data, { level: 6, strategy: constants.Z_FIXED });
      expect(deflateAt(data, FIXED_HUFFMAN).equals(fixed)).toBe(true);
    }
  });

  it('an output room too small for the stream gives deflateSync, not a cut stream', () => {
    const data = crypto.randomBytes(20000);
    const got = deflateOnce(data, 6, constants.Z_DEFAULT_STRATEGY, 100);
    expect(got.equals(deflateSync(data, { level: 6 }))).toBe(true);
  });
});

describe('the id of an object hashed in one call', () => {
  it('is the id git hash-object gives, either side of the one-call size', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-hash-'));
    try {
      gitOk(['init', '-q', '--bare', dir]);
      for (const size of [0, 1, 65535, 65536, 65537, 200000]) {
        const data = crypto.randomBytes(size);
        for (const type of ['blob', 'commit-like'] as const) {
          const args = ['hash-object', '--stdin', '--literally', '-t', type];
          const want = gitOk(args, { cwd: dir, input: data }).trim();
          expect(hashObjectBuffer(SHA1, type, data).toString('hex'), `${type} ${size}`).toBe(want);
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the removal of packed loose objects', () => {
  it("checks before each fan-out directory's first file and every 32 files; a throw stops it there", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-loose-rm-'));
    try {
      gitOk(['init', '-q', '--bare', dir]);
      // 600 blobs: a few fan-out directories of 1 to ~8 files
      const blobs = Array.from({ length: 600 }, (_, i) => `blob ${i}\n`);
      const ids = lines(
        gitOk(['hash-object', '-w', '--stdin-paths'], {
          cwd: dir,
          input: blobs
            .map((b, i) => {
              const f = path.join(dir, `in-${i}`);
              fs.writeFileSync(f, b);
              return f;
            })
            .join('\n'),
        }),
      );
      const objects = path.join(dir, 'objects');
      const files = ids.map((id) => path.join(objects, id.slice(0, 2), id.slice(2)));
      const before = objectSet(dir);
      expect(before).toHaveLength(600);
      // stop at the 40th check: the files of the checks before it are gone, no other
      let checks = 0;
      const order = [...files].sort();
      const removedAtCheck: number[] = [];
      expect(() =>
        removeLoose(objects, files, () => {
          removedAtCheck.push(order.filter((f) => !fs.existsSync(f)).length);
          if (++checks === 40) throw new Error('the new pack vanished');
        }),
      ).toThrow('the new pack vanished');
      const gone = removedAtCheck[39]!;
      expect(order.slice(0, gone).every((f) => !fs.existsSync(f))).toBe(true);
      expect(order.slice(gone).every((f) => fs.existsSync(f))).toBe(true);
      // git sees exactly the objects whose files remain
      const left = new Set(
        order.slice(gone).map((f) => path.basename(path.dirname(f)) + path.basename(f)),
      );
      expect(objectSet(dir)).toEqual(before.filter((l) => left.has(l.split(' ')[0]!)));
      // between two checks: one directory's files, never more than 32
      for (let k = 1; k < removedAtCheck.length; k++) {
        const batch = order.slice(removedAtCheck[k - 1], removedAtCheck[k]);
        expect(batch.length).toBeGreaterThan(0);
        expect(batch.length).toBeLessThanOrEqual(32);
        expect(new Set(batch.map((f) => path.dirname(f))).size).toBe(1);
      }
      // the rest goes, and the directories it leaves empty with it
      expect(removeLoose(objects, order.slice(gone))).toBe(600 - gone);
      expect(objectSet(dir)).toEqual([]);
      expect(order.slice(gone).filter((f) => fs.existsSync(path.dirname(f)))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
