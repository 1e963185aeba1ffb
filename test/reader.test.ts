import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixturePath, type FixtureName } from './fixtures/index.js';
import { gitDirOf, objectSet } from './helpers/git.js';
import { SHA1, SHA256, fromHex, hashObjectBuffer } from '../src/hash/algo.js';
import { ObjectDatabase } from '../src/store/odb.js';
import { typeName } from '../src/format/object-type.js';

// The reader's reuse of memory (transient results in one buffer, the base copied in front of the
// result, deltas of a chain in a stack arena) must never change a byte: every object, read in
// git's listing order with small and default delta base caches, hashes to its own id, transient
// or not, and a transient read followed by a normal one gives the same bytes.
describe('reader: transient reads and reused memory give the same objects', () => {
  for (const name of ['basic', 'ref-delta', 'multi-pack', 'sha256', 'promisor'] as FixtureName[]) {
    for (const cacheLimit of [1024, undefined]) {
      it(`${name}, delta base cache ${cacheLimit ?? 'default'}`, () => {
        const repo = fixturePath(name);
        const algo = name === 'sha256' ? SHA256 : SHA1;
        const odb = ObjectDatabase.open(algo, [path.join(gitDirOf(repo), 'objects')], cacheLimit);
        try {
          let deltas = 0;
          for (const line of objectSet(repo)) {
            const [hex, type, size] = line.split(' ');
            const id = fromHex(hex!, algo)!;
            const where = odb.locate(id);
            expect(where, hex).toBeDefined();
            const t = odb.readAt(where!, true);
            expect(typeName(t.type)).toBe(type);
            expect(t.data.length).toBe(Number(size));
            expect(hashObjectBuffer(algo, type!, t.data).equals(id), hex).toBe(true);
            const copy = Buffer.from(t.data);
            const n = odb.readAt(where!, false);
            expect(n.data.equals(copy), hex).toBe(true);
            if ('pack' in where! && where.pack.entry(where.index).hdr.type >= 6) deltas++;
          }
          expect(deltas).toBeGreaterThan(0); // the fixture really exercises delta chains
        } finally {
          odb.close();
        }
      });
    }
  }
});
