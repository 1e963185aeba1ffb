/**
 * The zstd export answers a signal between objects (issue 20: the export of a 4 GiB pack ignored
 * SIGTERM for over 15 s): stopped by the fault harness part-way through writing (its progress is
 * a fault point, as the rewrite's is), sent SIGTERM and resumed, it dies of the signal at once,
 * and neither the zstd pack nor its temporary file is left behind.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dateEnv, gitOk, objectSet } from './helpers/git.js';
import { runUntil } from './helpers/faults.js';

const MiB = 1 << 20;

describe('SIGTERM during a zstd export', () => {
  it('stopped at the third object written, then SIGTERM: dies of it at once, nothing left behind', async () => {
    const top = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-zstd-signal-'));
    try {
      const repo = path.join(top, 'repo.git');
      const run = (args: string[]): string => gitOk(args, { cwd: repo, env: dateEnv(1) });
      fs.mkdirSync(repo);
      run(['init', '-q', '--bare', '.']);
      // Twelve incompressible 4 MiB blobs: one batch, and one progress step, each.
      const file = path.join(top, 'in.bin');
      let tree = '';
      for (let i = 0; i < 12; i++) {
        const key = crypto.createHash('sha256').update(`blob ${i}`).digest().subarray(0, 16);
        fs.writeFileSync(
          file,
          crypto.createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(4 * MiB)),
        );
        tree += `100644 blob ${run(['hash-object', '-w', file]).trim()}\tb${i}\n`;
      }
      fs.rmSync(file);
      const t = gitOk(['mktree'], { cwd: repo, input: tree }).trim();
      run(['update-ref', 'refs/heads/main', run(['commit-tree', '-m', 'blobs', t]).trim()]);
      run(['-c', 'pack.compression=0', 'repack', '-adq']);
      const before = objectSet(repo);
      const outDir = path.join(top, 'out');
      fs.mkdirSync(outDir);
      const stopped = await runUntil(
        ['--zstd', '-q', '-o', path.join(outDir, 'all.zpack')],
        repo,
        'progress:writing objects:3',
      );
      try {
        expect(stopped.stopped).toBe(true);
        // The temporary zstd pack is being written.
        expect(fs.readdirSync(outDir).filter((n) => n.endsWith('.zpack.tmp'))).toHaveLength(1);
        process.kill(stopped.pid, 'SIGTERM');
        const t0 = Date.now();
        stopped.resume();
        const r = await stopped.done;
        expect({ signal: r.signal, stderr: r.stderr }).toEqual({ signal: 'SIGTERM', stderr: '' });
        // At most the object being compressed is finished first (a few 4 MiB blobs take a second).
        expect(Date.now() - t0).toBeLessThan(5000);
      } finally {
        stopped.kill();
      }
      expect(fs.readdirSync(outDir)).toEqual([]);
      expect(objectSet(repo)).toEqual(before);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  }, 60_000);
});
