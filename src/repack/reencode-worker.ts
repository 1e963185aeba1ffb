import { parentPort } from 'node:worker_threads';
import { runBatch, setBatchDicts, transferList, type BatchJob } from './batch.js';

// A worker thread of the rewrite: runs batches and hands the buffers and tables back (transferred, not copied).
parentPort!.on(
  'message',
  (msg: { id: number; job: BatchJob } | { dicts: { src?: Buffer[]; dst?: Buffer[] } }) => {
    if ('dicts' in msg) {
      setBatchDicts(
        msg.dicts.src?.map((d) => Buffer.from(d)),
        msg.dicts.dst?.map((d) => Buffer.from(d)),
      );
      return;
    }
    const r = runBatch(msg.job);
    parentPort!.postMessage({ id: msg.id, result: r }, transferList(r));
  },
);
