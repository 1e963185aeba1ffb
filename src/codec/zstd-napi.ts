import { createRequire } from 'node:module';
import { GitError, codecDiagnostic } from '../errors.js';
import type { ZstdCodec } from './zstd.js';

/*
 * zstd on zstd-napi (chosen by measurement before Node had zstd: docs/decisions.md —
 * synchronous, reusable contexts, prepared dictionaries, 1–3 µs per small object): the codec
 * where node:zlib has no zstd with dictionaries (Node 20, 22 before 22.19).
 */

export interface Binding {
  CCtx: new () => {
    setParameter(p: number, v: number): void;
    loadDictionary(d: Uint8Array): void;
    compress2(dst: Uint8Array, src: Uint8Array): number;
    compressStream2(
      dst: Uint8Array,
      src: Uint8Array,
      endOp: number,
    ): [returnValue: number, produced: number, consumed: number];
    reset(directive: number): void;
  };
  DCtx: new () => {
    setParameter(p: number, v: number): void;
    loadDictionary(d: Uint8Array): void;
    decompress(dst: Uint8Array, src: Uint8Array): number;
    decompressStream(
      dst: Uint8Array,
      src: Uint8Array,
    ): [returnValue: number, produced: number, consumed: number];
    reset(directive: number): void;
  };
  CParameter: Record<string, number>;
  compressBound(n: number): number;
  versionString(): string;
}

/** ZSTD_c_format / ZSTD_d_format (experimental parameters) and ZSTD_f_zstd1_magicless. */
const ZSTD_C_FORMAT = 10;
const ZSTD_D_FORMAT = 1000;
const MAGICLESS = 1;
/** ZSTD_reset_session_only: a new frame, the dictionary and parameters kept. */
const RESET_SESSION = 1;
/** ZSTD_e_continue / ZSTD_e_end (ZSTD_EndDirective). */
const CONTINUE = 0;
const END = 2;

/**
 * zstd-napi's binding, found as Node finds a package from this file (our own node_modules, or
 * one beside the installed package: `npm install -g zstd-napi`), or why it did not load.
 */
export function loadNapi(): Binding | string {
  try {
    return createRequire(import.meta.url)('zstd-napi/binding') as Binding;
  } catch (e) {
    return (e as Error).message.split('\n')[0]!;
  }
}

/** A codec over the given dictionaries (their index is the `dict` argument), on zstd-napi's binding. */
export function napiCodec(b: Binding, dicts: Uint8Array[]): ZstdCodec {
  const cctxs = new Map<string, InstanceType<Binding['CCtx']>>();
  const dctxs = new Map<number, InstanceType<Binding['DCtx']>>();
  let scratch = Buffer.allocUnsafe(1 << 16);
  const cctx = (level: number, dict: number): InstanceType<Binding['CCtx']> => {
    const key = `${level}/${dict}`;
    let c = cctxs.get(key);
    if (c === undefined) {
      c = new b.CCtx();
      c.setParameter(b.CParameter.compressionLevel!, level);
      c.setParameter(b.CParameter.contentSizeFlag!, 0);
      c.setParameter(b.CParameter.checksumFlag!, 0);
      c.setParameter(b.CParameter.dictIDFlag!, 0);
      c.setParameter(ZSTD_C_FORMAT, MAGICLESS);
      if (dict >= 0) c.loadDictionary(dicts[dict]!);
      cctxs.set(key, c);
    }
    return c;
  };
  const dctx = (dict: number): InstanceType<Binding['DCtx']> => {
    let d = dctxs.get(dict);
    if (d === undefined) {
      d = new b.DCtx();
      d.setParameter(ZSTD_D_FORMAT, MAGICLESS);
      if (dict >= 0) d.loadDictionary(dicts[dict]!);
      dctxs.set(dict, d);
    }
    return d;
  };
  return {
    version: b.versionString(),
    compress(data, level, dict) {
      const bound = b.compressBound(data.length);
      if (scratch.length < bound) scratch = Buffer.allocUnsafe(Math.max(bound, scratch.length * 2));
      const n = cctx(level, dict).compress2(scratch, data);
      return Buffer.from(scratch.subarray(0, n));
    },
    decompress(frame, size, dict, into) {
      // One byte of room more than declared: a frame that decodes to more is caught below.
      const room =
        into !== undefined && into.length > size
          ? into.subarray(0, size + 1)
          : Buffer.allocUnsafe(size + 1);
      let n: number;
      try {
        n = dctx(dict).decompress(room, frame);
      } catch (e) {
        throw new GitError('bad-object', `zstd: ${codecDiagnostic(e)}`, { cause: e });
      }
      if (n !== size)
        throw new GitError(
          'bad-object',
          `zstd frame decodes to ${n > size ? `more than ${size}` : n} bytes, not the declared ${size}`,
        );
      return room.subarray(0, size);
    },
    frameReader(dict, chunk = 1 << 20, reuse = false) {
      const d = dctx(dict);
      const kept = reuse ? Buffer.allocUnsafe(chunk) : undefined;
      d.reset(RESET_SESSION);
      let left = 1; // ZSTD_decompressStream's hint: 0 once the frame is complete
      return {
        *feed(input) {
          let at = 0;
          // Until the frame ends, or the input is used up and the output no longer fills a piece.
          for (;;) {
            const out = kept ?? Buffer.allocUnsafe(chunk);
            let r: [number, number, number];
            try {
              r = d.decompressStream(out, input.subarray(at));
            } catch (e) {
              throw new GitError('bad-object', `zstd: ${codecDiagnostic(e)}`, { cause: e });
            }
            left = r[0];
            at += r[2];
            if (r[1] > 0) yield out.subarray(0, r[1]);
            if (left === 0) {
              if (at < input.length)
                throw new GitError('bad-object', 'zstd: data after the end of the frame');
              return;
            }
            if (r[1] < chunk && at >= input.length) return; // more input needed
          }
        },
        ended: () => left === 0,
      };
    },
    frameWriter(level, dict, chunk = 1 << 20) {
      const c = cctx(level, dict);
      c.reset(RESET_SESSION);
      const out = Buffer.allocUnsafe(chunk);
      function* run(input: Uint8Array, op: number): Generator<Buffer> {
        for (let at = 0; ;) {
          const [left, produced, consumed] = c.compressStream2(out, input.subarray(at), op);
          at += consumed;
          if (produced > 0) yield out.subarray(0, produced);
          // Done when the input is taken and the output did not fill (to continue) or all is out (to end).
          if (at >= input.length && (op === CONTINUE ? produced < out.length : left === 0)) return;
        }
      }
      return { feed: (input) => run(input, CONTINUE), end: () => run(new Uint8Array(0), END) };
    },
    bound: (n) => b.compressBound(n),
  };
}
