import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { hashSecret } from '../../lib/keys/secrets';
import { createApiKey, revokeApiKey } from '../../lib/store/key-admin';
import { keepMemoryState, loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { MAX_STORED_RESPONSES } from '../../lib/store/memory-responses';
import { MemoryStore } from '../../lib/store/memory-store';
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

  it('keeps at most MAX_STORED_RESPONSES stored responses, dropping the oldest of the key holding the most', async () => {
    const store = new MemoryStore();
    const record = (i: number) => ({ id: `resp_${i}`, keyId: `k${i % 20}`, response: {}, items: [] });
    for (let i = 0; i <= MAX_STORED_RESPONSES; i++) await store.saveResponse(record(i), 60_000);
    expect(await store.getResponse('resp_0')).to.equal(null);
    expect(await store.getResponse('resp_1')).to.deep.equal(record(1));
    expect(await store.getResponse(`resp_${MAX_STORED_RESPONSES}`)).to.deep.equal(record(MAX_STORED_RESPONSES));
  });

  it('one key filling the store evicts only its own stored responses, never another key\'s', async () => {
    const store = new MemoryStore();
    const victim = { id: 'resp_victim', keyId: 'victim', response: {}, items: ['kept'] };
    await store.saveResponse(victim, 60_000);
    for (let i = 0; i <= MAX_STORED_RESPONSES; i++) await store.saveResponse({ id: `resp_a${i}`, keyId: 'attacker', response: {}, items: [] }, 60_000);
    expect(await store.getResponse('resp_victim')).to.deep.equal(victim);
    expect(await store.getResponse(`resp_a${MAX_STORED_RESPONSES}`)).to.not.equal(null);
    expect(await store.getResponse('resp_a0')).to.equal(null);
  });

  it('refuses a stored response that would put its key past maxKeyBytes, and gives bytes back on delete', async () => {
    const store = new MemoryStore();
    const big = (id: string) => ({ id, keyId: 'k', response: {}, items: ['x'.repeat(600)] });
    expect(await store.saveResponse(big('resp_1'), 60_000, 1000)).to.equal(true);
    expect(await store.saveResponse(big('resp_2'), 60_000, 1000)).to.equal(false);
    expect(await store.getResponse('resp_2')).to.equal(null);
    expect(await store.saveResponse({ ...big('resp_3'), keyId: 'other' }, 60_000, 1000)).to.equal(true);
    await store.deleteResponse('resp_1');
    expect(await store.saveResponse(big('resp_2'), 60_000, 1000)).to.equal(true);
  });

  it('forgets settled reservations: they do not grow with traffic', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 1000; i++) {
      const r = await store.reserveCredits('k1', '2025-06', 1, 10, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      await store.settleCredits(r.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0 });
    }
    expect((store as unknown as { reservations: { size: number } }).reservations.size).to.equal(0);
    expect(Object.keys(store as object)).not.to.include('settled');
  });

  it('checks and reserves in one step: of two reservations asked at once, the second sees the first', async () => {
    const store = new MemoryStore();
    // Against a cap of 10: the first hold of 6 is in place when the second is checked.
    const [first, second] = await Promise.all([
      store.reserveCredits('k1', '2025-06', 6, 10, 60_000),
      store.reserveCredits('k1', '2025-06', 6, 10, 60_000),
    ]);
    expect([first.ok, second.ok]).to.deep.equal([true, false]);
  });

  describe('state file (graceful restart of one instance)', () => {
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-state-'))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it('flushes a batch or file pin made while nothing else changed (a crash keeps its holds and billing state)', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore();
      const stop = keepMemoryState(before, file, (err) => { throw err; }, 10);
      try {
        await before.savePin({ kind: 'batch', id: 'msgbatch_kept', keyId: 'k1', data: { billed: false } }, 60_000);
        await new Promise((resolve) => setTimeout(resolve, 80));
        const after = new MemoryStore();
        expect(loadMemoryState(after, file)).to.equal(true);
        expect(await after.getPin('batch', 'msgbatch_kept')).to.include({ id: 'msgbatch_kept', keyId: 'k1' });
      } finally {
        stop();
      }
    });

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

    it('keeps the day totals, the request log and pending budget alerts across save and load', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore(() => Date.UTC(2025, 5, 15));
      const r = await before.reserveCredits('k1', '2025-06', 5, null, 60_000);
      if (!r.ok) throw new Error('reserve failed');
      const log = { time: 0, requestId: 'req_1', keyId: 'k1', keyGroup: 'default', route: 'POST /v1/messages', model: 'm', status: 200, stopReason: 'end_turn',
        inputTokens: 10, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, firstByteMs: 5, durationMs: 9, streamed: true, clientAborted: false, sessionId: null, agentId: null, upstreamTarget: null };
      await before.settleCredits(r.reservation, { model: 'm', inputTokens: 10, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.3, log });
      const alert = { id: 'k1:2025-06:50', keyId: 'k1', keyName: 'k1', threshold: 50, spent: 5, cap: 10, month: '2025-06', crossedAt: 1 };
      await before.claimBudgetAlert(alert);
      saveMemoryState(before, file);

      const after = new MemoryStore(() => Date.UTC(2025, 5, 15));
      loadMemoryState(after, file);
      expect(await after.getDailyUsage('k1', '2025-06')).to.deep.equal([
        { day: '2025-06-15', model: 'm', inputTokens: 10, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0.3, requests: 1 },
      ]);
      expect((await after.readRequestLog(0, Date.UTC(2026, 0), null, 10)).records).to.deep.equal([{ ...log, time: Date.UTC(2025, 5, 15), credits: 0.3 }]);
      expect(await after.leaseBudgetAlert(Date.UTC(2025, 5, 15), 1000)).to.deep.equal({ alert, attempts: 0 });
      expect(await after.claimBudgetAlert(alert)).to.equal(false);
    });

    it('keeps pins across save and load, and the holds of a batch not yet billed (so it is billed once, later)', async () => {
      const file = path.join(dir, 'state.json');
      const now = () => Date.UTC(2025, 5, 15);
      const before = new MemoryStore(now);
      const hold = await before.reserveCredits('k1', '2025-06', 6, 10, 30 * 86_400_000);
      if (!hold.ok) throw new Error('reserve failed');
      await before.savePin({ kind: 'batch', id: 'msgbatch_1', keyId: 'k1', data: { billed: false, models: {}, holds: [{ model: 'm', reservation: hold.reservation }] } }, 30 * 86_400_000);
      await before.savePin({ kind: 'file', id: 'file_1', keyId: 'k1', data: {} }, 86_400_000);
      saveMemoryState(before, file);

      const after = new MemoryStore(now);
      loadMemoryState(after, file);
      expect((await after.getPin('batch', 'msgbatch_1'))!.keyId).to.equal('k1');
      expect((await after.getPin('file', 'file_1'))!.keyId).to.equal('k1');
      // The batch's hold still counts against the cap, and settles once.
      expect((await after.reserveCredits('k1', '2025-06', 5, 10, 60_000)).ok).to.equal(false);
      await after.settleCredits(hold.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 2 });
      await after.settleCredits(hold.reservation, { model: 'm', inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 2 });
      expect(await after.getMonthSpend('k1', '2025-06')).to.equal(2);
      expect((await after.reserveCredits('k1', '2025-06', 5, 10, 60_000)).ok).to.equal(true);
    });

    const logRecord = (i: number) => ({ time: 0, requestId: `req_${i}`, keyId: 'k1', keyGroup: 'default', route: 'POST /v1/messages', model: 'm', status: 200,
      stopReason: 'end_turn', inputTokens: i, outputTokens: 2, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, firstByteMs: null,
      durationMs: 9, streamed: false, clientAborted: false, sessionId: 'line\nbreak', agentId: null, upstreamTarget: null });
    const logFilesIn = (dir: string) => fs.readdirSync(dir).filter((name) => name.endsWith('.jsonl'));
    const readIds = async (store: MemoryStore) => (await store.readRequestLog(0, 1, null, 100_000)).records.map((r) => r.requestId);

    it('appends only the request log records written since the last save to the log file beside the state', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore(() => 0);
      for (let i = 0; i < 3; i++) await before.appendRequestLog(logRecord(i));
      saveMemoryState(before, file);
      const [logFile] = logFilesIn(dir);
      const lines = () => fs.readFileSync(path.join(dir, logFile), 'utf8').split('\n').length - 1;
      expect(lines()).to.equal(3);
      saveMemoryState(before, file);
      expect(lines()).to.equal(3);
      for (let i = 3; i < 5; i++) await before.appendRequestLog(logRecord(i));
      saveMemoryState(before, file);
      expect(lines()).to.equal(5);
      expect(fs.readFileSync(file, 'utf8')).not.to.include('req_1');

      const after = new MemoryStore(() => 0);
      loadMemoryState(after, file);
      expect(await readIds(after)).to.deep.equal(['req_0', 'req_1', 'req_2', 'req_3', 'req_4']);
      expect((await after.readRequestLog(0, 1, null, 1)).records[0]).to.deep.equal(logRecord(0));
      // Loaded, it goes on appending to the same file.
      await after.appendRequestLog(logRecord(5));
      saveMemoryState(after, file);
      expect(logFilesIn(dir)).to.deep.equal([logFile]);
      expect(lines()).to.equal(6);
    });

    it('leaves out records appended after the last state write (a crash between the two writes)', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore(() => 0);
      await before.appendRequestLog(logRecord(0));
      saveMemoryState(before, file);
      const logFile = path.join(dir, logFilesIn(dir)[0]);
      fs.appendFileSync(logFile, `${JSON.stringify(logRecord(1))}\n{"half a rec`);

      const after = new MemoryStore(() => 0);
      loadMemoryState(after, file);
      expect(await readIds(after)).to.deep.equal(['req_0']);
      await after.appendRequestLog(logRecord(2));
      saveMemoryState(after, file);
      const again = new MemoryStore(() => 0);
      loadMemoryState(again, file);
      expect(await readIds(again)).to.deep.equal(['req_0', 'req_2']);
    });

    it('starts a new log file once records the log dropped are most of it, and removes the old one', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore(() => 0);
      before.setRequestLogRetention(86_400_000, 10);
      await before.appendRequestLog(logRecord(0));
      saveMemoryState(before, file);
      const [first] = logFilesIn(dir);
      for (let i = 1; i < 2000; i++) {
        await before.appendRequestLog(logRecord(i));
        saveMemoryState(before, file);
      }
      expect(logFilesIn(dir)).to.have.length(1).and.not.include(first);
      // Rewritten when about 1034 of its lines were dropped ones: at most that many since.
      expect(fs.readFileSync(path.join(dir, logFilesIn(dir)[0]), 'utf8').split('\n').length).to.be.within(11, 1100);
      const after = new MemoryStore(() => 0);
      loadMemoryState(after, file);
      expect(await readIds(after)).to.deep.equal(Array.from({ length: 10 }, (_, i) => `req_${1990 + i}`));
    });

    it('reads a state file that holds its request log inline (written before the log file)', async () => {
      const file = path.join(dir, 'state.json');
      const before = new MemoryStore(() => 0);
      await before.appendRequestLog(logRecord(0));
      fs.writeFileSync(file, JSON.stringify(before.snapshot()));
      const after = new MemoryStore(() => 0);
      loadMemoryState(after, file);
      expect(await readIds(after)).to.deep.equal(['req_0']);
    });

    it('starts empty without a file, and refuses a file it cannot read back', () => {
      expect(loadMemoryState(new MemoryStore(), path.join(dir, 'none.json'))).to.equal(false);
      const bad = path.join(dir, 'bad.json');
      fs.writeFileSync(bad, '{"not":"a snapshot"}');
      expect(() => loadMemoryState(new MemoryStore(), bad)).to.throw(/cannot be read back/);
    });
  });
});
