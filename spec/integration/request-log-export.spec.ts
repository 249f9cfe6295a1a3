/**
 * An export of 100,000 request log records streams in constant memory, on both stores: the gateway
 * reads the log a page at a time and waits for the client to take each page.
 *
 * Measured: the heap still in use (after a full garbage collection) sampled every 10,000 records
 * while the export is read, against the same figure before it starts. The bound: it grows by less
 * than 8 MiB, while the export itself is over 30 MB of text (the records held at once would take
 * more than that again as objects).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { expect } from 'chai';
import { ADMIN_TOKEN } from '../helpers/admin';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';
import { MemoryStore } from '../../lib/store/memory-store';
import type { GatewayStore, RequestLogRecord } from '../../lib/store/types';
import { utcDay } from '../../lib/store/usage-days';

const RECORDS = 100_000;
const HEAP_GROWTH_BOUND = 8 * 1024 * 1024;

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

function heapInUse(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

async function fillLog(store: GatewayStore, start: number): Promise<void> {
  for (let batch = 0; batch < RECORDS; batch += 1000) {
    await Promise.all(Array.from({ length: 1000 }, (_, i) => {
      const n = batch + i;
      const record: RequestLogRecord = {
        time: start + n, requestId: `req_${String(n).padStart(24, '0')}`, keyId: `team-${n % 7}`, keyGroup: 'default',
        route: 'POST /v1/messages', model: 'model-sonnet-4.6', status: n % 50 === 0 ? 529 : 200, stopReason: 'end_turn',
        inputTokens: 1200 + n % 100, outputTokens: 300, cacheCreationInputTokens: 0, cacheReadInputTokens: 1024, credits: 0.0084,
        firstByteMs: 312.5, durationMs: 1820.25, streamed: n % 2 === 0, clientAborted: false, sessionId: `sess-${n % 11}`, agentId: null, upstreamTarget: n % 2 === 0 ? 'primary' : null,
      };
      return store.appendRequestLog(record);
    }));
  }
}

for (const storeKind of ['memory', 'redis'] as const) {
  describe(`request log export of ${RECORDS} records (${storeKind} store)`, function () {
    this.timeout(120_000);
    const prefix = uniqueRedisPrefix('export');
    let gw: TestGateway;
    before(async () => {
      const store = storeKind === 'redis' ? await connectTestRedisStore(prefix) : new MemoryStore();
      gw = await startTestGateway({ env: { ADMIN_TOKEN }, store });
      await fillLog(gw.gateway.store, Date.now() - RECORDS - 1000);
    });
    after(async () => {
      await gw?.close();
      if (storeKind === 'redis') await deleteRedisPrefix(prefix);
    });

    it(`streams every record (NDJSON) while the heap in use grows by less than ${HEAP_GROWTH_BOUND / 1024 / 1024} MiB`, async () => {
      const today = Date.now();
      const query = `from=${utcDay(today - 86_400_000)}&to=${utcDay(today)}`;
      const baseline = heapInUse();
      const response = await fetch(`${gw.url}/admin/v1/requests?${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(response.status).to.equal(200);
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let lines = 0;
      let bytes = 0;
      let tail = '';
      let nextSample = 10_000;
      let largestGrowth = 0;
      let lastId = -1;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.byteLength;
        const text = tail + decoder.decode(value, { stream: true });
        const parts = text.split('\n');
        tail = parts.pop()!;
        for (const line of parts) {
          const id = Number(JSON.parse(line).requestId.slice(4));
          expect(id, 'in order, none twice').to.equal(lastId + 1);
          lastId = id;
        }
        lines += parts.length;
        if (lines >= nextSample) {
          largestGrowth = Math.max(largestGrowth, heapInUse() - baseline);
          nextSample += 10_000;
        }
      }
      process.stdout.write(`      (${(bytes / 1e6).toFixed(1)} MB exported; heap in use grew by at most ${(largestGrowth / 1024 / 1024).toFixed(2)} MiB)\n`);
      expect(lines).to.equal(RECORDS);
      expect(bytes).to.be.greaterThan(30_000_000);
      expect(largestGrowth, `heap in use grew by ${(largestGrowth / 1024 / 1024).toFixed(1)} MiB`).to.be.below(HEAP_GROWTH_BOUND);
    });
  });
}
