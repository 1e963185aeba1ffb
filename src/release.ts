import { MessageChannel } from 'node:worker_threads';

/** Below this a buffer is not worth a message: V8's own collection frees it soon enough. */
const MIN_RELEASE = 1 << 16;

/**
 * Gives the memory of typed arrays that will not be used again back to the system now, instead
 * of at V8's next full collection (which a heap as small as the rewrite's may not run for
 * seconds, while tens of MB of dead tables wait for it: docs/benchmarks.md §6).
 *
 * Each array's buffer is transferred into a message on a channel closed at once: the buffer is
 * detached here (the array reads as empty from then on) and its memory is freed with the
 * unread message, on the next turn of the event loop. Only arrays that own their whole
 * buffer are released (never a view into Node's Buffer pool or a shared buffer); others are
 * left to the collector.
 */
export function releaseNow(...arrays: (ArrayBufferView | undefined)[]): void {
  const buffers: ArrayBuffer[] = [];
  for (const a of arrays) {
    if (a === undefined) continue;
    const b = a.buffer;
    if (
      b instanceof ArrayBuffer &&
      a.byteOffset === 0 &&
      a.byteLength === b.byteLength &&
      b.byteLength >= MIN_RELEASE &&
      !buffers.includes(b)
    )
      buffers.push(b);
  }
  if (buffers.length === 0) return;
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(null, buffers);
  port1.close();
  port2.close();
}
