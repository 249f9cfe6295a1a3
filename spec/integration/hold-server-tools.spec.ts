/**
 * The credit hold counts the per-request prices of the server tools a request offers (issue 40, open
 * part 5): web searches, and also web fetches (`web_fetch_*`) and code executions (`code_execution_*`),
 * each up to its `max_uses` (else `reservation.webSearchesPerRequest`). A request whose web fetches
 * would pass the cap is refused with a 402 that names them, before its message reaches the upstream.
 * Through the Anthropic SDK, on both stores.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import { utcMonth } from '../../lib/store/month';
import type { GatewayStore } from '../../lib/store/types';
import { nativeMessage } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/gateway';
import { connectTestRedisStore, deleteRedisPrefix, uniqueRedisPrefix } from '../helpers/redis';

// eslint-disable-next-line @typescript-eslint/no-var-requires
const shipped = require('../../../config.json');

const KEY = 'sk-cs4-test-hold-server-tools-0040';
const CAP = 0.4;
/**
 * A model whose tokens cost little against the cap (a 1,000-token window, so a tool's sampling steps add
 * at most 1,000 input tokens each) and whose web fetches and code executions have a price.
 */
const FETCHER = {
  id: 'fetcher', upstreamModel: 'model-fetcher-1', pricing: { inputPerMillion: 1, outputPerMillion: 5, webFetchPerRequest: 0.1, codeExecutionPerRequest: 0.05 },
  capabilities: { thinking: 'none', sampling: ['temperature'], maxOutputTokens: 1000, contextWindow: 1000, minCacheableTokens: 1024 },
};
const fetchTool = (maxUses: number) => ({ type: 'web_fetch_20250910', name: 'web_fetch', max_uses: maxUses });

for (const kind of ['memory', 'redis'] as const) {
  describe(`the hold counts web fetch and code execution prices (${kind} store)`, function () {
    this.timeout(30_000);
    let gw: TestGateway;
    const prefix = uniqueRedisPrefix('hold-server-tools');
    before(async () => {
      const store: GatewayStore | undefined = kind === 'redis' ? await connectTestRedisStore(prefix) : undefined;
      gw = await startTestGateway({
        store, apiRules: false,
        handler: (request) => ({ kind: 'json', body: { ...nativeMessage('fetched', { input_tokens: 50, output_tokens: 5 }, request.body.model), usage: { input_tokens: 50, output_tokens: 5, server_tool_use: { web_fetch_requests: 1 } } } }),
        overrides: { models: [...shipped.models, FETCHER], keys: [{ id: 'tools', key: KEY, monthlyCreditCap: CAP, rateLimitPerMinute: 1000 }] },
      });
    });
    after(async () => {
      await gw.close();
      if (kind === 'redis') await deleteRedisPrefix(prefix);
    });

    it('refuses with a 402 naming the web fetches a request whose fetch uses would pass the cap; no message reaches the upstream', async () => {
      const client = new Anthropic({ apiKey: KEY, baseURL: gw.url, maxRetries: 0 });
      const before = gw.upstream.requests.length;
      const refused = await client.beta.messages.create({
        model: 'fetcher', max_tokens: 16, betas: ['web-fetch-2025-09-10'], tools: [fetchTool(5)] as never,
        messages: [{ role: 'user', content: 'fetch these pages' }],
      }).catch((err) => err);
      expect(refused).to.be.instanceOf(Anthropic.APIError);
      expect(refused.status).to.equal(402);
      expect(refused.message).to.include('up to 0.5 credits for server tool requests (5 web fetch(es) at 0.1)');
      const code = await client.beta.messages.create({
        model: 'fetcher', max_tokens: 16, betas: ['code-execution-2025-08-25'], tools: [{ type: 'code_execution_20250825', name: 'code_execution', max_uses: 9 }] as never,
        messages: [{ role: 'user', content: 'run it' }],
      }).catch((err) => err);
      expect(code.status).to.equal(402);
      expect(code.message).to.include('9 code execution(s) at 0.05');
      // Measured with the free count_tokens at most (middleware/measured-input.ts), never sent.
      expect(gw.upstream.requests.slice(before).map((request) => request.url), 'no message sent upstream').to.satisfy((urls: string[]) => urls.every((url) => url.startsWith('/v1/messages/count_tokens')));
    });

    it('admits one whose fetches fit, billed at the fetches the upstream reports', async () => {
      const client = new Anthropic({ apiKey: KEY, baseURL: gw.url, maxRetries: 0 });
      const reply = await client.beta.messages.create({
        model: 'fetcher', max_tokens: 16, betas: ['web-fetch-2025-09-10'], tools: [fetchTool(2)] as never,
        messages: [{ role: 'user', content: 'fetch one page' }],
      });
      expect(reply.usage.input_tokens).to.equal(50);
      const month = utcMonth(Date.now());
      let spend = 0;
      for (let i = 0; i < 50 && spend === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        spend = await gw.gateway.store.getMonthSpend('tools', month);
      }
      expect(spend).to.be.closeTo(0.1 + (50 * 1 + 5 * 5) / 1e6, 1e-9);
    });
  });
}
