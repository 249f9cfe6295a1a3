import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys';
import { createApiKey, revokeApiKey } from '../../lib/store/key-admin';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { MAX_STORED_RESPONSES, MemoryStore } from '../../lib/store/memory-store';
import { describeStoreContract } from '../helpers/store-contract';

describe('MemoryStore', () => {
  describeStoreContract(
    async () => {
      let now = 0;
      const store = new MemoryStore(() => now);
      return { store, setNow: (ms) => (now = ms) };
    },
    async (f) => f.store.close(),
  );

  it('keeps at most MAX_STORED_RESPONSES stored responses, dropping the oldest first', async () => {
    const store = new MemoryStore();
    const record = (i: number) => ({ id: `resp_${i}`, keyId: 'k', response: {}, items: [] });
    for (let i = 0; i <= MAX_STORED_RESPONSES; i++) await store.saveResponse(record(i), 60_000);
    expect(await store.getResponse('resp_0')).to.equal(null);
    expect(await store.getResponse('resp_1')).to.deep.equal(record(1));
    expect(await store.getResponse(`resp_${MAX_STORED_RESPONSES}`)).to.deep.equal(record(MAX_STORED_RESPONSES));
  });

  it('forgets settled reservations: its holds do not grow with traffic', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 1000; i++) {
      const r = await store.reserveCredits('k1', '2025-06', 1, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await store.settleCredits(r.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0 });
    }
    expect((store as unknown as { holds: Map<string, unknown> }).holds.size).to.equal(0);
    expect(Object.keys(store as object)).not.to.include('settled');
  });

  it('does the work of a request\'s call at once and answers at the end of the turn (as a Redis reply arrives)', async () => {
    const store = new MemoryStore();
    const answers: string[] = [];
    // Two reservations asked in one turn against a cap of 10: the first hold is in place when the second is checked.
    const first = store.reserveCredits('k1', '2025-06', 6, 10, 60_000).then((r) => answers.push(`first ${r.ok}`));
    const second = store.reserveCredits('k1', '2025-06', 6, 10, 60_000).then((r) => answers.push(`second ${r.ok}`));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(answers, 'microtasks alone bring no answer').to.deep.equal([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).to.deep.equal(['first true', 'second false']);
    await Promise.all([first, second]);
  });

  describe('state file (graceful restart of one instance)', () => {
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-state-'))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('keeps keys, revocations, spend and usage across save and load', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore();
      const issued = await createApiKey(before, { id: 'k1', rateLimitPerMinute: 5, monthlyCreditCap: 20 });
      await createApiKey(before, { id: 'k2', rateLimitPerMinute: 5 });
      await revokeApiKey(before, 'k2');
      const r = await before.reserveCredits('k1', '2025-06', 5, 20, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await before.settleCredits(r.reservation, { model: 'model-haiku-4.5', inputTokens: 10, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.3 });
      saveMemoryState(before, file);
      expect(fs.readFileSync(file, 'utf8')).not.to.include(issued.secret);

      const after = new MemoryStore();
      expect(loadMemoryState(after, file)).to.equal(true);
      expect((await after.findKeyBySecretHash(hashSecret(issued.secret)))!.monthlyCreditCap).to.equal(20);
      expect((await after.getKey('k2'))!.revoked).to.equal(true);
      expect(await after.getMonthSpend('k1', '2025-06')).to.equal(0.3);
      expect((await after.getUsage('k1', '2025-06'))[0]).to.include({ inputTokens: 10, requests: 1, credits: 0.3 });
    });

    it('starts empty without a file, and refuses a file it cannot read back', () => {
      expect(loadMemoryState(new MemoryStore(), path.join(dir, 'none.json'))).to.equal(false);
      const bad = path.join(dir, 'bad.json');
      fs.writeFileSync(bad, '{"not":"a snapshot"}');
      expect(() => loadMemoryState(new MemoryStore(), bad)).to.throw(/cannot be read back/);
    });
  });
});
