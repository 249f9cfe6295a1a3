/** The store contract's stored responses and pins: kept for a time, per id, bounded per key. */
import { expect } from 'chai';
import type { ResponseStore } from '../../../lib/store/types';
import { type ContractFixture, T0, HOUR } from './shared';

export function describeResponseStoreContract(current: () => ContractFixture<ResponseStore>): void {
  let f: ContractFixture<ResponseStore>;
  beforeEach(() => {
    f = current();
  });

  describe('pins (message batches, files)', () => {
    it('keeps a pin per kind and id until it is deleted or its time is up', async () => {
      const pin = { kind: 'batch' as const, id: `msgbatch_${Math.random().toString(36).slice(2)}`, keyId: 'k1', data: { billed: false, models: { a: 'm' } } };
      await f.store.savePin(pin, HOUR);
      expect(await f.store.getPin('batch', pin.id)).to.deep.equal(pin);
      expect(await f.store.getPin('file', pin.id), 'kinds apart').to.equal(null);
      await f.store.savePin({ ...pin, data: { billed: true } }, HOUR);
      expect((await f.store.getPin('batch', pin.id))!.data).to.deep.equal({ billed: true });
      expect(await f.store.deletePin('batch', pin.id)).to.equal(true);
      expect(await f.store.getPin('batch', pin.id)).to.equal(null);
      expect(await f.store.deletePin('batch', pin.id)).to.equal(false);
      const file = { kind: 'file' as const, id: `file_${Math.random().toString(36).slice(2)}`, keyId: 'k2', data: {} };
      await f.store.savePin(file, 5);
      f.setNow(T0 + 10);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(await f.store.getPin('file', file.id)).to.equal(null);
    });

    it('reads several pins of a kind in one call, in the order asked, null for those it has not', async () => {
      const ids = ['a', 'b', 'c'].map((tag) => `file_${tag}_${Math.random().toString(36).slice(2)}`);
      for (const id of [ids[0], ids[2]]) await f.store.savePin({ kind: 'file', id, keyId: 'k1', data: { sizeBytes: id.length } }, HOUR);
      const pins = await f.store.getPins('file', [ids[2], ids[1], ids[0]]);
      expect(pins.map((pin) => pin?.id ?? null)).to.deep.equal([ids[2], null, ids[0]]);
      expect(pins[0]).to.deep.equal({ kind: 'file', id: ids[2], keyId: 'k1', data: { sizeBytes: ids[2].length } });
      expect(await f.store.getPins('batch', ids)).to.deep.equal([null, null, null]);
      expect(await f.store.getPins('file', [])).to.deep.equal([]);
    });
  });

  describe('stored responses', () => {
    const record = (id: string, keyId = 'k1') => ({ id, keyId, response: { id, object: 'response', status: 'completed' }, items: [{ role: 'user', content: 'Hi' }] });

    it('keeps a response until it is deleted, as a copy', async () => {
      const saved = record(`resp_${Math.random().toString(36).slice(2)}`);
      await f.store.saveResponse(saved, HOUR);
      const read = await f.store.getResponse(saved.id);
      expect(read).to.deep.equal(saved);
      read!.items.push('changed');
      expect((await f.store.getResponse(saved.id))!.items).to.have.length(1);
      expect(await f.store.deleteResponse(saved.id)).to.equal(true);
      expect(await f.store.getResponse(saved.id)).to.equal(null);
      expect(await f.store.deleteResponse(saved.id)).to.equal(false);
    });

    it('refuses a response that would put its key past maxKeyBytes; other keys are not affected', async () => {
      const owner = `k_${Math.random().toString(36).slice(2)}`;
      const big = (id: string, keyId = owner) => ({ id, keyId, response: {}, items: ['x'.repeat(600)] });
      const first = big(`resp_${Math.random().toString(36).slice(2)}`);
      expect(await f.store.saveResponse(first, HOUR, 1000)).to.equal(true);
      const second = big(`resp_${Math.random().toString(36).slice(2)}`);
      expect(await f.store.saveResponse(second, HOUR, 1000)).to.equal(false);
      expect(await f.store.getResponse(second.id)).to.equal(null);
      expect(await f.store.getResponse(first.id)).to.deep.equal(first);
      expect(await f.store.saveResponse(big(`resp_${Math.random().toString(36).slice(2)}`, `${owner}_other`), HOUR, 1000)).to.equal(true);
    });

    it('gives a key at its byte bound room again once its time is up, however often it keeps trying', async () => {
      const owner = `k_${Math.random().toString(36).slice(2)}`;
      const big = () => ({ id: `resp_${Math.random().toString(36).slice(2)}`, keyId: owner, response: {}, items: ['x'.repeat(600)] });
      expect(await f.store.saveResponse(big(), 40, 1000)).to.equal(true);
      // A save every 10 ms, refused ones included, must not keep pushing the bound's end back (Redis
      // counts in real time; the memory store reads its clock, moved past the first save's time to live).
      let accepted = false;
      for (let i = 0; i < 20 && !accepted; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (i >= 5) f.setNow(T0 + 70_000);
        accepted = await f.store.saveResponse(big(), 40, 1000);
      }
      expect(accepted).to.equal(true);
    });

    it('forgets a response when its time is up', async () => {
      const saved = record(`resp_${Math.random().toString(36).slice(2)}`);
      await f.store.saveResponse(saved, 5);
      // The memory store reads its clock; Redis expires the key itself, in real time.
      f.setNow(T0 + 10);
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(await f.store.getResponse(saved.id)).to.equal(null);
    });
  });
}
