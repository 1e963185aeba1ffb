import type { PackSink } from '../format/pack-writer.js';
import { encodeEntryHeader, encodeOfsDistance } from '../format/pack.js';
import { OBJ_OFS_DELTA } from '../format/object-type.js';

/**
 * Consecutive entries copied exactly as they were (git's reuse of an entry whose header does not
 * change either: no OFS_DELTA distance moved), gathered from one batch's source buffer into a
 * single write whose CRC32s are already known (the batch checked each against the old idx).
 * Per entry this saves the copy of its header and data apart and a second CRC32 of its bytes:
 * in a pack written by git, blobs come after every commit and tree, so a level change for those
 * leaves nearly every blob's entry as it was.
 */
export class CopyRun {
  private src: Buffer = EMPTY;
  private start = 0;
  private end = 0;
  private n = 0;
  private readonly slots: Uint32Array;
  private readonly crcs: Uint32Array;

  constructor(capacity: number) {
    this.slots = new Uint32Array(capacity);
    this.crcs = new Uint32Array(capacity);
  }

  /** Bytes gathered and not yet handed to the sink. */
  get pending(): number {
    return this.end - this.start;
  }

  /**
   * Whether the entry at `src[start, end)` (its header `headerLen` bytes) comes out unchanged at
   * output offset `offset`: the header this rewrite writes (`hdr`, filled here: its type, size,
   * OFS_DELTA distance to `baseOffset`, or -1 for none) is byte for byte the one it has.
   */
  static unchanged(
    hdr: Buffer,
    src: Buffer,
    start: number,
    headerLen: number,
    type: number,
    size: number,
    offset: number,
    baseOffset: number,
  ): boolean {
    const hl = writtenHeader(hdr, type, size, offset, baseOffset);
    if (hl !== headerLen) return false;
    for (let k = 0; k < hl; k++) if (hdr[k] !== src[start + k]) return false;
    return true;
  }

  /** Adds the entry at `src[start, end)` for slot `slot`; a gap in `src` hands the run so far to `sink` first. */
  add(sink: PackSink, src: Buffer, start: number, end: number, slot: number, crc: number): void {
    if (this.n > 0 && (src !== this.src || start !== this.end || this.n === this.slots.length))
      this.flush(sink);
    if (this.n === 0) {
      this.src = src;
      this.start = start;
    }
    this.end = end;
    this.slots[this.n] = slot;
    this.crcs[this.n++] = crc;
  }

  /** Hands what was gathered to `sink` (before anything else is written, and before `src` is reused). */
  flush(sink: PackSink): void {
    if (this.n === 0) return;
    sink.copyEntries(this.src, this.start, this.end, this.slots, this.crcs, this.n);
    this.n = 0;
    this.start = this.end = 0;
    this.src = EMPTY;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * The header an entry gets in the new pack at `offset` (git's write_object), into `hdr`; its
 * length. `baseOffset`: its base's offset there (an OFS_DELTA), or -1 for an object whole.
 */
export function writtenHeader(
  hdr: Buffer,
  type: number,
  size: number,
  offset: number,
  baseOffset: number,
): number {
  const hl = encodeEntryHeader(baseOffset >= 0 ? OBJ_OFS_DELTA : type, size, hdr, 0);
  return baseOffset >= 0 ? hl + encodeOfsDistance(offset - baseOffset, hdr, hl) : hl;
}
