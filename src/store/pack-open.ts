import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { openRegular, readRegular } from './regular.js';
import { hasExt, shownPath, type FsPath } from './fs-path.js';
import { GitError, corrupt, systemError } from '../errors.js';
import type { HashAlgo } from '../hash/algo.js';
import { PackIndex, parseIdx } from '../format/idx.js';
import { PACK_HEADER_SIZE, parsePackHeader } from '../format/pack.js';
import { isZpack, parseZpackFooter, parseZpackHeader, type ZpackHeader } from '../format/zpack.js';
import { requireZstd } from '../codec/zstd.js';

/**
 * What opening a pack finds, checked, before a `Pack` is made of it (git's `add_packed_git` and
 * `open_packed_git`): the open file, its index, its header and where its entries lie.
 */
export interface OpenedPack {
  files: { pack: FsPath; idx: FsPath };
  algo: HashAlgo;
  fd: number;
  size: number;
  idx: PackIndex;
  header: { version: number; count: number };
  layout: { dataStart: number; dataEnd: number; zpack?: ZpackHeader };
  revPath?: FsPath | undefined;
}

/**
 * `<name>.pack` with `<name>.idx`, agreeing on the object count and checksum, or a zstd pack,
 * which carries its own index (when the file is no `.pack` or has no `.idx`).
 */
export function openPackFiles(
  packFile: FsPath,
  algo: HashAlgo,
  idxFile: FsPath,
  revPath?: FsPath,
): OpenedPack {
  const packPath = shownPath(packFile);
  const idxPath = shownPath(idxFile);
  if (!packPath.endsWith('.pack') || !existsSync(idxFile)) {
    const z = openZpackFile(packFile);
    if (z !== undefined) {
      if (z.algo.name !== algo.name) {
        const name = z.algo.name;
        closeSync(z.fd);
        throw corrupt('bad-pack', packPath, 12, `zstd pack of ${name} objects, not ${algo.name}`);
      }
      return z;
    }
  }
  let idxBuf: Buffer;
  try {
    idxBuf = readRegular(idxFile); // never blocks on a FIFO
  } catch (e) {
    if (e instanceof GitError) throw e;
    throw systemError('io', 'cannot read', e, idxPath);
  }
  const idx = parseIdx(idxBuf, algo, idxPath);
  const fd = openRegular(packFile);
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(PACK_HEADER_SIZE);
    const got = readSync(fd, head, 0, PACK_HEADER_SIZE, 0);
    if (got < PACK_HEADER_SIZE) throw corrupt('bad-pack', packPath, got, 'pack header truncated');
    const header = parsePackHeader(head, packPath);
    if (size < PACK_HEADER_SIZE + algo.len)
      throw corrupt('bad-pack', packPath, size, 'pack file truncated');
    if (header.count !== idx.count) {
      throw corrupt(
        'bad-pack',
        packPath,
        8,
        `pack has ${header.count} objects but ${idxPath} has ${idx.count}`,
      );
    }
    const trailer = Buffer.alloc(algo.len);
    readSync(fd, trailer, 0, algo.len, size - algo.len);
    if (!trailer.equals(idx.packChecksum)) {
      throw corrupt(
        'bad-pack',
        packPath,
        size - algo.len,
        `pack trailer does not match the checksum recorded in ${idxPath}`,
      );
    }
    const layout = { dataStart: PACK_HEADER_SIZE, dataEnd: size - algo.len };
    return {
      files: { pack: packFile, idx: idxFile },
      algo,
      fd,
      size,
      idx,
      header,
      layout,
      revPath,
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The zstd pack at `path`, or undefined when the file does not start with its signature. */
export function openZpackFile(path: FsPath): OpenedPack | undefined {
  const fd = openRegular(path);
  try {
    const head = Buffer.alloc(4);
    const got = readSync(fd, head, 0, 4, 0);
    // Not "index file too small" (the issue-34 report): a name of neither git file is ours.
    if (got === 0 && !hasExt(path, '.pack') && !hasExt(path, '.idx'))
      throw corrupt('bad-pack', shownPath(path), 0, 'empty file, not a zstd pack');
    if (!isZpack(head)) {
      closeSync(fd);
      return undefined;
    }
    requireZstd(shownPath(path)); // without zstd nothing in it can be read: one error, not one per entry
    return zpackParts(path, fd, fstatSync(fd).size);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/**
 * A zstd pack: header, dictionaries and refs at the front, the index at the offset the footer
 * names. The index's pack checksum covers everything before it (checked by verify).
 */
function zpackParts(file: FsPath, fd: number, size: number): OpenedPack {
  const path = shownPath(file);
  const readAt = (pos: number, len: number): Buffer => {
    const b = Buffer.alloc(len);
    let done = 0;
    while (done < len) {
      const n = readSync(fd, b, done, len - done, pos + done);
      if (n === 0) throw corrupt('bad-pack', path, pos + done, 'unexpected end of file');
      done += n;
    }
    return b;
  };
  const h = parseZpackHeader(readAt, size, path);
  const len = h.algo.len;
  if (size < h.dataStart + 8 + len) throw corrupt('bad-pack', path, size, 'zstd pack truncated');
  const footerAt = size - len - 8;
  const indexStart = parseZpackFooter(readAt(footerAt, 8));
  if (indexStart < h.dataStart || indexStart > footerAt)
    throw corrupt('bad-pack', path, footerAt, `index offset ${indexStart} out of range`);
  const idx = parseIdx(
    readAt(indexStart, footerAt - indexStart),
    h.algo,
    `${path} (index at offset ${indexStart})`,
  );
  if (idx.count !== h.count)
    throw corrupt(
      'bad-pack',
      path,
      8,
      `header says ${h.count} objects but the index has ${idx.count}`,
    );
  return {
    files: { pack: file, idx: file },
    algo: h.algo,
    fd,
    size,
    idx,
    header: { version: h.version, count: h.count },
    layout: { dataStart: h.dataStart, dataEnd: indexStart, zpack: h },
  };
}

/** Reads [at, at + len) of the `.idx` again, for an index that let its ids go (`PackIndex.releaseIds`). */
export function idxRereader(idxFile: FsPath, file: string): (at: number, len: number) => Buffer {
  return (at, len) => {
    const out = Buffer.allocUnsafe(len);
    // A system error as it is: the repack names a file that vanished (another git gc?).
    const fd = openSync(idxFile, 'r');
    try {
      for (let done = 0; done < len;) {
        const n = readSync(fd, out, done, len - done, at + done);
        if (n === 0)
          throw corrupt(
            'bad-idx',
            file,
            at + done,
            'index file shorter than when it was first read',
          );
        done += n;
      }
    } finally {
      closeSync(fd);
    }
    return out;
  };
}
