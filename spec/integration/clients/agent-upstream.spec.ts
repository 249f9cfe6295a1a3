/**
 * The client matrix's fake upstream (spec/helpers/agent-upstream.ts) must never be where a real
 * client's request fails: it serves what the real API serves, whatever the body's shape, and answers
 * probes. Checked directly, without a gateway in front.
 */
import { expect } from 'chai';
import { createAgentUpstream, TEXT_PIECES } from '../../helpers/agent-upstream';
import { startFakeUpstream, type FakeUpstream } from '../../helpers/fake-upstream';

describe('clients: the agent-like fake upstream', () => {
  let upstream: FakeUpstream;
  const agent = createAgentUpstream();
  before(async () => {
    upstream = await startFakeUpstream(agent.handler);
  });
  after(async () => upstream.close());

  const post = (path: string, body: unknown) =>
    fetch(`${upstream.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('answers HEAD and GET probes, and count_tokens with ?beta=true', async () => {
    expect((await fetch(upstream.url, { method: 'HEAD' })).status).to.equal(200);
    expect((await fetch(`${upstream.url}/v1/models`)).status).to.equal(200);
    const counted = await post('/v1/messages/count_tokens?beta=true', { model: 'm', messages: [] });
    expect(await counted.json()).to.deep.equal({ input_tokens: 42 });
    expect(agent.reported).to.have.length(0);
  });

  it('answers any body shape on /v1/messages?beta=true, and records it', async () => {
    const body = { model: 'm', max_tokens: 5, messages: [{ role: 'critic', content: [{ type: 'hologram' }] }], a_future_field: { x: 1 } };
    const reply = await post('/v1/messages?beta=true', body);
    expect(reply.status).to.equal(200);
    expect(((await reply.json()) as any).content).to.deep.equal([{ type: 'text', text: TEXT_PIECES.join('') }]);
    expect(upstream.requests[upstream.requests.length - 1]).to.deep.include({ url: '/v1/messages?beta=true', body });
    expect(agent.reported).to.have.length(1);
  });

  it('asks for an offered tool, then quotes the tool_result sent back for its id', async () => {
    agent.setScript({ chooseTool: (offered) => (offered.includes('lookup') ? { name: 'lookup', input: { q: 'x' } } : null) });
    const tools = [{ name: 'lookup', input_schema: { type: 'object' } }];
    const messages: any[] = [{ role: 'user', content: 'go' }];
    const first = (await (await post('/v1/messages', { model: 'm', max_tokens: 5, tools, messages })).json()) as any;
    expect(first.stop_reason).to.equal('tool_use');
    const toolUse = first.content.find((b: any) => b.type === 'tool_use');
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: [{ type: 'text', text: 'found' }] }] });
    const second = (await (await post('/v1/messages', { model: 'm', max_tokens: 5, tools, messages })).json()) as any;
    expect(second.content).to.deep.equal([{ type: 'text', text: 'Tool lookup said: found' }]);
  });
});
