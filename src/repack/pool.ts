import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { runBatch, setBatchDicts, transferList, type BatchJob, type BatchResult } from './batch.js';

/** GIT_REPACK_TS_THREADS: a forced number of worker threads (tests, benchmarks), at most 16. */
export function forcedThreads(env: NodeJS.ProcessEnv): number | undefined {
  const v = env.GIT_REPACK_TS_THREADS;
  return v !== undefined && /^\d+$/.test(v) ? Math.min(Number(v), 16) : undefined;
}

/** The fewest entries a rewrite starts worker threads for. */
export const THREADS_FROM = 200_000;

/** Runs batches on worker threads (round robin), or inline when there are none (and, if asked, a share of them inline beside the workers). */
export class BatchPool {
  /** Batches handed out so far (which of them run on this thread: `inlineEvery`). */
  private jobs = 0;
  private readonly workers: Worker[] = [];
  private readonly pending = new Map<
    number,
    { resolve: (r: BatchResult) => void; reject: (e: Error) => void }
  >();
  private nextId = 0;
  private rr = 0;

  /**
   * `inlineEvery` = N > 0: besides the workers, this thread runs every Nth batch itself, in the
   * time it would otherwise spend waiting for theirs. On git.git with one worker (two cores) the
   * main thread waited 37 % of a `--no-fsck` rewrite while the worker inflated; taking every
   * third batch: 4.89 → 4.22 s (4 interleaved rounds, docs/benchmarks.md §7f). Not while git reads
   * the changed entries beside the rewrite: git needs that core then (validated: no gain).
   */
  constructor(
    threads: number,
    private readonly inlineEvery = 0,
  ) {
    for (let i = 0; i < threads; i++) {
      const w = new Worker(new URL('./reencode-worker.js', import.meta.url));
      w.on('message', (m: { id: number; result: BatchResult }) => {
        const p = this.pending.get(m.id);
        this.pending.delete(m.id);
        p?.resolve(m.result);
      });
      w.on('error', (e) => {
        for (const p of this.pending.values()) p.reject(e);
        this.pending.clear();
      });
      this.workers.push(w);
    }
  }

  /** How many worker threads a rewrite of this many entries deserves. */
  static threadsFor(entries: number, forced?: number): number {
    if (forced !== undefined) return forced;
    // Each thread (the re-encoding worker here, the writing thread with it) costs 40-60 ms of CPU
    // to start and load its modules, and the pipeline's hand-offs more: nginx (95k entries)
    // without them took 12-21 % less CPU, wall within 5 % either way, on two busy cores
    // (docs/benchmarks.md §7a). git.git (849k) gains a quarter of its time from them.
    if (entries < THREADS_FROM) return 0;
    return Math.max(1, Math.min(4, availableParallelism() - 1));
  }

  /** The zstd dictionaries of the packs read and written, for every thread (and inline runs). */
  setDicts(src: Buffer[] | undefined, dst: Buffer[] | undefined): void {
    setBatchDicts(src, dst);
    for (const w of this.workers) w.postMessage({ dicts: { src, dst } });
  }

  get threads(): number {
    return this.workers.length;
  }

  run(job: BatchJob): Promise<BatchResult> {
    if (
      this.workers.length === 0 ||
      (this.inlineEvery > 0 && ++this.jobs % this.inlineEvery === 0)
    ) {
      // A turn of the event loop per batch, as a worker's reply gives: a signal (Ctrl-C) or an
      // abort is then seen between batches, not once the whole rewrite is done (a run without
      // threads otherwise only awaits settled promises, and signal handlers never get to run).
      return new Promise((resolve, reject) =>
        setImmediate(() => {
          try {
            resolve(runBatch(job));
          } catch (e) {
            reject(e as Error);
          }
        }),
      );
    }
    const id = this.nextId++;
    const w = this.workers[this.rr++ % this.workers.length]!;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ id, job }, transferList(job));
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
    this.workers.length = 0;
  }
}
