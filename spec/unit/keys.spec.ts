import { expect } from 'chai';
import { hashSecret, randomBase62, randomId } from '../../lib/keys/secrets';

for (const [name, random] of [['randomBase62 (secrets)', randomBase62], ['randomId (request and response ids, from a byte pool)', randomId]] as const) {
  describe(name, () => {
    it('gives ids of the asked length, base62 only, all distinct across many refills of its byte pool', () => {
      const ids = new Set<string>();
      for (let i = 0; i < 2000; i++) {
        const id = random(24);
        expect(id).to.match(/^[A-Za-z0-9]{24}$/);
        ids.add(id);
      }
      expect(ids.size).to.equal(2000);
    });

    it('uses every base62 character about equally often (no modulo bias)', () => {
      const counts = new Map<string, number>();
      const text = random(62 * 2000);
      for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
      expect(counts.size).to.equal(62);
      // Expected 2000 each; a biased generator (byte % 62 without rejection) gives the first 8 about 2,400.
      for (const [ch, n] of counts) expect(n, ch).to.be.within(1700, 2300);
    });
  });
}

describe('hashSecret', () => {
  it('is the hex SHA-256 of the UTF-8 secret (stored hashes and config keySha256 values keep matching)', () => {
    expect(hashSecret('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('\u00e9')).to.equal('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });
});
