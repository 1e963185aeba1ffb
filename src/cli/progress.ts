import type { Io } from './io.js';

/** Streams whose last progress line is still open (written with `\r`, no newline yet). */
const openLine = new WeakSet<Io>();

/** A warning on a line of its own, never inside a progress line (the progress goes on below it). */
export function warn(io: Io, message: string): void {
  if (openLine.has(io)) {
    io.err('\n');
    openLine.delete(io);
  }
  io.err(`warning: ${message}\n`);
}

/** git-style progress on stderr: `Title:  42% (420/1000)` rewritten in place, then `, done.` */
export class Progress {
  private last = -1;
  private lastTime = 0;
  private lastDone = 0;

  constructor(
    private readonly io: Io,
    private readonly title: string,
    private readonly total: number,
  ) {}

  update(done: number): void {
    this.lastDone = done;
    const now = Date.now();
    const pct = this.total > 0 ? Math.floor((done * 100) / this.total) : -1;
    if (pct === this.last && now - this.lastTime < 1000) return;
    if (now - this.lastTime < 100 && pct !== 100) return;
    this.last = pct;
    this.lastTime = now;
    this.io.err(`\r${this.line(done)}`);
    openLine.add(this.io);
  }

  private line(done: number): string {
    if (this.total > 0) {
      const pct = Math.floor((done * 100) / this.total);
      return `${this.title}: ${String(pct).padStart(3)}% (${done}/${this.total})`;
    }
    return `${this.title}: ${done}`;
  }

  stop(done = this.lastDone): void {
    this.io.err(`\r${this.line(done)}, done.\n`);
    openLine.delete(this.io);
  }
}

/** Progress is shown when stderr is a terminal, unless `-q`; `--progress`/`--no-progress` override. */
export function wantProgress(
  io: Io,
  opts: { quiet?: boolean | undefined; progress?: boolean | undefined },
): boolean {
  if (opts.progress !== undefined) return opts.progress;
  return io.stderrIsTty && !opts.quiet;
}

/** One progress line per phase name, from a callback of (phase, done, total). */
export function phaseReporter(
  io: Io,
  enabled: boolean,
): ((phase: string, done: number, total: number) => void) | undefined {
  if (!enabled) return undefined;
  let current: { name: string; p: Progress; total: number } | undefined;
  // A phase reported complete again (the writer and its caller both say 100 %) is done once.
  let finished: string | undefined;
  return (phase, done, total) => {
    if (current === undefined && phase === finished && total > 0 && done >= total) return;
    finished = undefined;
    if (current && current.name !== phase) {
      current.p.stop();
      current = undefined;
    }
    if (!current)
      current = {
        name: phase,
        p: new Progress(io, phase[0]!.toUpperCase() + phase.slice(1), total),
        total,
      };
    current.p.update(done);
    if (done >= total && total > 0) {
      current.p.stop(done);
      current = undefined;
      finished = phase;
    }
  };
}

/**
 * Without a terminal, a long command still says where it is: one line per step when there are
 * few steps (bench's scenarios), else at each quarter, as `Title: done/total` on stderr.
 */
export function lineReporter(io: Io): (phase: string, done: number, total: number) => void {
  const shown = new Map<string, number>();
  return (phase, done, total) => {
    if (total <= 0 || done <= 0) return;
    const mark = total <= 20 ? done : Math.floor((done * 4) / total);
    if ((shown.get(phase) ?? 0) >= mark) return;
    shown.set(phase, mark);
    io.err(`${phase[0]!.toUpperCase()}${phase.slice(1)}: ${done}/${total}\n`);
  };
}
