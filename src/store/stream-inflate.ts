import { createInflate } from 'node:zlib';
import { corrupt } from '../errors.js';
import type { Hash } from 'node:crypto';
import type { Pack } from './pack.js';

/**
 * Inflates one entry's data straight from the pack into `sink` (e.g. a hash), 1 MiB at a
 * time, never holding the object: git's path for blobs above `core.bigFileThreshold`.
 * The stream must yield exactly `size` bytes and end exactly at `end`.
 */
export async function inflateEntryStreaming(pack: Pack, dataStart: number, end: number, size: number, sink: Hash): Promise<void> {
  const file = pack.packPath;
  const inf = createInflate({ chunkSize: 1 << 20 });
  let produced = 0;
  let tooBig = false;
  let failed: Error | undefined;
  const finished = new Promise<void>((resolve, reject) => {
    inf.on('data', (d: Buffer) => {
      produced += d.length;
      if (produced > size) {
        tooBig = true;
        inf.destroy();
        resolve();
        return;
      }
      sink.update(d);
    });
    inf.on('end', resolve);
    inf.on('error', (e) => {
      failed = e;
      reject(e);
    });
  });
  // Observed at once, so that an error while we are still writing is never an unhandled rejection.
  finished.catch(() => undefined);
  try {
    const chunk = 1 << 20;
    for (let pos = dataStart; pos < end && !tooBig && failed === undefined; pos += chunk) {
      const buf = pack.read(pos, Math.min(chunk, end - pos));
      if (!inf.write(buf)) {
        // Each wait takes its listeners off again: left on, a blob of more than ten chunks
        // of backpressure made Node warn of a listener leak on stderr (issue 20).
        await new Promise<void>((r) => {
          const done = (): void => {
            inf.off('drain', done).off('error', done).off('close', done);
            r();
          };
          inf.on('drain', done).on('error', done).on('close', done);
        });
      }
    }
    if (failed === undefined && !tooBig) inf.end();
    await finished;
  } catch (e) {
    throw corrupt('bad-object', file, dataStart, `corrupt object data (zlib: ${(e as Error).message})`);
  }
  if (tooBig) throw corrupt('bad-object', file, dataStart, `inflates to more than the declared ${size} bytes`);
  if (produced !== size) throw corrupt('bad-object', file, dataStart, `inflated size ${produced} does not match declared size ${size}`);
  if (inf.bytesWritten !== end - dataStart) {
    throw corrupt('bad-object', file, dataStart, `zlib stream ends after ${inf.bytesWritten} of ${end - dataStart} bytes`);
  }
}
