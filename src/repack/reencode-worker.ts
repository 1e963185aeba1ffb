import { parentPort } from 'node:worker_threads';
import { runBatch, type BatchJob } from './batch.js';

// A worker thread of the rewrite: runs batches and hands the buffers back (transferred, not copied).
parentPort!.on('message', (msg: { id: number; job: BatchJob }) => {
  const r = runBatch(msg.job);
  const transfer = r.out === r.buf ? [r.buf] : [r.buf, r.out];
  parentPort!.postMessage({ id: msg.id, result: r }, transfer);
});
