import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { SHA1, SHA256 } from '../src/hash/algo.js';
import { MAX_ENTRY_HEADER, encodeEntryHeader, encodeOfsDistance } from '../src/format/pack.js';
import { OBJ_BLOB, OBJ_OFS_DELTA } from '../src/format/object-type.js';
import type * as Writer from '../src/format/pack-writer.js';
import type * as Threaded from '../src/format/pack-writer-threaded.js';
import { armFaults, writeChunksSyncing } from '../src/store/files.js';
// The threaded writer starts its thread from the built file next to it: use the build (typed
// by its source, as dist carries no declarations).
const { PackFileWriter, syncAndClose } = (await import(
  '../dist/format/pack-writer.js' as string
)) as typeof Writer;
const { ThreadedPackWriter } = (await import(
  '../dist/format/pack-writer-threaded.js' as string
)) as typeof Threaded;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-writer-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** How many of this process's descriptors are open on `f`. */
function openOn(f: string): number {
  return fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === f;
    } catch {
      return false;
    }
  }).length;
}

/** Entries of every awkward size: empty data, one byte, exactly a buffer, spanning several. */
function entries(seed: number, n: number, bufferSize: number): { header: Buffer; data: Buffer }[] {
  const rnd = (k: number): number =>
    crypto.createHash('sha1').update(`${seed}:${k}`).digest().readUInt32BE(0);
  const out: { header: Buffer; data: Buffer }[] = [];
  for (let i = 0; i < n; i++) {
    const r = rnd(i);
    const sizes = [0, 1, bufferSize - 1, bufferSize, bufferSize + 1, 3 * bufferSize + 7, r % 300];
    const len = sizes[r % sizes.length]!;
    // Headers as git writes them (blob, size), sometimes an OFS_DELTA with a distance: the
    // writing thread parses every header when it reads the pack back.
    const h = Buffer.alloc(MAX_ENTRY_HEADER);
    let hl = encodeEntryHeader(r % 3 === 0 && i > 0 ? OBJ_OFS_DELTA : OBJ_BLOB, len, h, 0);
    if (r % 3 === 0 && i > 0) hl += encodeOfsDistance(1 + (r % 7), h, hl);
    out.push({ header: h.subarray(0, hl), data: crypto.randomBytes(len) });
  }
  return out;
}

describe('the threaded pack writer writes what the plain one writes', () => {
  for (const [bufferSize, algo] of [
    [16, SHA1],
    [61, SHA256],
    [4096, SHA1],
  ] as const) {
    it(`ring buffers of ${bufferSize} bytes (${algo.name})`, async () => {
      const list = entries(bufferSize, 300, bufferSize);
      const n = list.length;
      // Slots are not the write order: the thread must map one to the other.
      const order = new Uint32Array(new SharedArrayBuffer(4 * n));
      const slots = [...Array(n).keys()].sort((a, b) => crc32(String(a)) - crc32(String(b)));
      slots.forEach((s, k) => (order[k] = s));
      const offsets = new Float64Array(new SharedArrayBuffer(8 * n));
      const crcs = new Uint32Array(new SharedArrayBuffer(4 * n));
      const plainCrcs = new Uint32Array(n);
      const tPath = path.join(dir, `t-${bufferSize}.pack`);
      const pPath = path.join(dir, `p-${bufferSize}.pack`);
      const t = new ThreadedPackWriter(tPath, algo, n, { offsets, order, crcs }, bufferSize);
      const p = new PackFileWriter(pPath, algo, n, plainCrcs);
      for (let k = 0; k < n; k++) {
        const s = order[k]!;
        offsets[s] = t.offset;
        expect(t.offset).toBe(p.offset);
        t.writeEntry(list[k]!.header, list[k]!.data, s);
        p.writeEntry(list[k]!.header, list[k]!.data, s);
      }
      const a = await t.finish();
      await a.durable;
      await a.readBack; // every header parsed, every CRC32 matched on reading the file back
      const b = await p.finish();
      expect(a.checksum.equals(b.checksum)).toBe(true);
      expect(fs.readFileSync(tPath).equals(fs.readFileSync(pPath))).toBe(true);
      expect([...crcs]).toEqual([...plainCrcs]);
      // And each CRC32 is that of the entry's bytes in the file.
      const file = fs.readFileSync(tPath);
      for (let k = 0; k < n; k++) {
        const s = order[k]!;
        const end = k + 1 < n ? offsets[order[k + 1]!]! : file.length - algo.len;
        expect(crc32(file.subarray(offsets[s]!, end))).toBe(crcs[s]);
      }
      expect((fs.statSync(tPath).mode & 0o777).toString(8)).toBe('444');
    });
  }

  it('reading back, a header that does not parse fails the read-back with its offset', async () => {
    const n = 3;
    const tables = {
      offsets: new Float64Array(new SharedArrayBuffer(8 * n)),
      order: new Uint32Array(new SharedArrayBuffer(4 * n)),
      crcs: new Uint32Array(new SharedArrayBuffer(4 * n)),
    };
    const file = path.join(dir, 'bad-header.pack');
    const t = new ThreadedPackWriter(file, SHA1, n, tables, 64);
    const headers = [Buffer.from([0x35]), Buffer.from([0x55]), Buffer.from([0x35])]; // type 5 is no type
    for (let k = 0; k < n; k++) {
      tables.order[k] = k;
      tables.offsets[k] = t.offset;
      t.writeEntry(headers[k]!, crypto.randomBytes(5), k);
    }
    const a = await t.finish();
    await a.durable;
    await expect(a.readBack).rejects.toThrow(
      new RegExp(`bad-header.pack.*at offset ${tables.offsets[1]}`),
    );
  });

  it('an abort stops the thread and closes the file; nothing hangs', async () => {
    const n = 50;
    const tables = {
      offsets: new Float64Array(new SharedArrayBuffer(8 * n)),
      order: new Uint32Array(new SharedArrayBuffer(4 * n)),
      crcs: new Uint32Array(new SharedArrayBuffer(4 * n)),
    };
    const file = path.join(dir, 'aborted.pack');
    const t = new ThreadedPackWriter(file, SHA1, n, tables, 32);
    for (let k = 0; k < 20; k++) {
      tables.order[k] = k;
      tables.offsets[k] = t.offset;
      t.writeEntry(Buffer.from([0x30]), crypto.randomBytes(100), k);
    }
    expect(openOn(file)).toBe(1);
    await t.abort();
    // The writer closed its descriptor (not merely: the file can be deleted).
    expect(openOn(file)).toBe(0);
    fs.rmSync(file);
    expect(fs.existsSync(file)).toBe(false);
  });

  it('the plain writer fsyncs after finish returns: the file is complete, its descriptor closed once durable resolves, and an fsync failure reaches durable', async () => {
    const file = path.join(dir, 'plain-durable.pack');
    const crcs = new Uint32Array(2);
    const w = new PackFileWriter(file, SHA1, 2, crcs, undefined, 64);
    const datas = [crypto.randomBytes(10), crypto.randomBytes(200)];
    datas.forEach((d, k) => w.writeEntry(Buffer.from([0x30 | (d.length % 16)]), d, k));
    const { checksum, durable } = await w.finish();
    await durable;
    expect(openOn(file)).toBe(0);
    const bytes = fs.readFileSync(file);
    // The trailer is the SHA-1 of everything before it (computed here, not by the writer).
    expect(checksum.equals(crypto.createHash('sha1').update(bytes.subarray(0, -20)).digest())).toBe(
      true,
    );
    expect(bytes.subarray(-20).equals(checksum)).toBe(true);
    // An fsync that fails (a descriptor already closed: EBADF) rejects, it is not swallowed.
    const fd = fs.openSync(file, 'r');
    fs.closeSync(fd);
    await expect(syncAndClose(fd)).rejects.toMatchObject({ code: 'EBADF', syscall: 'fsync' });
  });

  it('writeChunksSyncing: the content is there at once, the descriptor is closed once the promise resolves; an injected fault before the fsync throws at once and leaves nothing open', async () => {
    const file = path.join(dir, 'syncing.idx');
    const done = writeChunksSyncing(file, (write) => {
      write(Buffer.from('abc'));
      write(Buffer.from('def'));
    });
    expect(fs.readFileSync(file, 'utf8')).toBe('abcdef');
    await done;
    expect(openOn(file)).toBe(0);
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe(
      (0o444 & ~process.umask()).toString(8),
    );
    const other = path.join(dir, 'syncing-fault.idx');
    armFaults('fsync:eio', undefined);
    try {
      expect(() => writeChunksSyncing(other, (write) => write(Buffer.from('x')))).toThrow(
        /EIO.*fsync/,
      );
    } finally {
      armFaults(undefined, undefined);
    }
    expect(openOn(other)).toBe(0);
  });

  // A real full disk (root only: a 64 KiB tmpfs); elsewhere this case is recorded as not run.
  const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'rts-full-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]).status === 0;
  afterAll(() => {
    if (mounted) spawnSync('umount', [mnt]);
    fs.rmSync(mnt, { recursive: true, force: true });
  });
  it.skipIf(!mounted)(
    'a full disk is the system error it was (ENOSPC, write), from handing over or from finishing',
    async () => {
      for (const entries of [200, 3]) {
        const n = entries;
        const tables = {
          offsets: new Float64Array(new SharedArrayBuffer(8 * n)),
          order: new Uint32Array(new SharedArrayBuffer(4 * n)),
          crcs: new Uint32Array(new SharedArrayBuffer(4 * n)),
        };
        const file = path.join(mnt, `full-${n}.pack`);
        const t = new ThreadedPackWriter(file, SHA1, n, tables, 4096);
        let err: NodeJS.ErrnoException | undefined;
        try {
          for (let k = 0; k < n; k++) {
            tables.order[k] = k;
            tables.offsets[k] = t.offset;
            // 200 entries of 4 KiB fill the disk while buffers are handed over; 3 of 30 KiB only
            // when the last one is written, after finish().
            t.writeEntry(Buffer.from([0x30]), crypto.randomBytes(n > 10 ? 4096 : 30_000), k);
          }
          const r = await t.finish();
          await r.durable;
        } catch (e) {
          err = e as NodeJS.ErrnoException;
        }
        expect({ code: err?.code, syscall: err?.syscall }).toEqual({
          code: 'ENOSPC',
          syscall: 'write',
        });
        expect(err?.message).toMatch(/no space left on device/);
        await t.abort();
        fs.rmSync(file);
      }
    },
  );

  it('refuses tables outside shared memory', () => {
    const n = 1;
    expect(
      () =>
        new ThreadedPackWriter(path.join(dir, 'never.pack'), SHA1, n, {
          offsets: new Float64Array(n),
          order: new Uint32Array(n),
          crcs: new Uint32Array(n),
        }),
    ).toThrow(/shared memory/);
    expect(fs.existsSync(path.join(dir, 'never.pack'))).toBe(false);
  });
});
