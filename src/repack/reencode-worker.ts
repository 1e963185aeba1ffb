import { parentPort } from 'node:worker_threads';
import { runBatch, setBatchDicts, type BatchJob } from './batch.js';

// A worker thread of the rewrite: runs batches and hands the buffers back (transferred, not copied).
parentPort!.on('message', (msg: { id: number; job: BatchJob } | { dicts: { src?: Buffer[]; dst?: Buffer[] } }) => {
  if ('dicts' in msg) {
    setBatchDicts(msg.dicts.src?.map((d) => Buffer.from(d)), msg.dicts.dst?.map((d) => Buffer.from(d)));
    return;
  }
  const r = runBatch(msg.job);
  const transfer = r.out === r.buf ? [r.buf] : [r.buf, r.out];
  parentPort!.postMessage({ id: msg.id, result: r }, transfer);
});
