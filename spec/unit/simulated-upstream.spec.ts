/**
 * The embedded simulated upstream (lib/upstream/simulated-upstream.ts) answers what the real API answers for the
 * paths the listed clients send: routed by path without the query (Claude Code's `?beta=true`), the
 * models list and get, the reachability probe, and 404 / 405 in the native error envelope.
 */
import { expect } from 'chai';
import { startSimulatedUpstream, type SimulatedUpstream } from '../../lib/upstream/simulated-upstream';

describe('simulated upstream (the embedded default)', () => {
  let sim: SimulatedUpstream;
  before(async () => {
    sim = await startSimulatedUpstream({ deltaDelayMs: 0, models: () => ['model-sonnet-4.6', 'model-haiku-4.5'] });
  });
  after(() => sim.close());

  const post = (path: string, body: object) => fetch(`${sim.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const prompt = { model: 'model-sonnet-4.6', max_tokens: 100, messages: [{ role: 'user', content: 'Hello' }] };

  it('answers POST /v1/messages?beta=true (Claude Code), whole and streamed', async () => {
    const whole = await post('/v1/messages?beta=true', prompt);
    expect(whole.status).to.equal(200);
    const message = (await whole.json()) as any;
    expect(message).to.include({ type: 'message', role: 'assistant', model: 'model-sonnet-4.6', stop_reason: 'end_turn' });
    expect(message.content[0].text).to.contain('simulated reply').and.contain('Hello');
    const streamed = await post('/v1/messages?beta=true', { ...prompt, stream: true });
    expect(streamed.status).to.equal(200);
    expect(streamed.headers.get('content-type')).to.equal('text/event-stream');
    expect(await streamed.text()).to.contain('event: message_start').and.contain('simulated').and.contain('event: message_stop');
  });

  it("echoes what the user typed, not the context a client wraps in tags (Claude Code's <system-reminder>)", async () => {
    const content = [{ type: 'text', text: '<system-reminder>\nproject notes\n</system-reminder>' }, { type: 'text', text: 'hello gateway' }];
    const message = (await (await post('/v1/messages', { ...prompt, messages: [{ role: 'user', content }] })).json()) as any;
    expect(message.content[0].text).to.contain('You said: "hello gateway"');
  });

  it('answers POST /v1/messages/count_tokens?beta=true with input_tokens', async () => {
    const res = await post('/v1/messages/count_tokens?beta=true', { model: 'model-sonnet-4.6', messages: prompt.messages });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as any;
    expect(body.input_tokens).to.be.a('number').above(0);
  });

  it('lists and gets its models in the native shape; an unknown id is a 404 not_found_error', async () => {
    const list = (await (await fetch(`${sim.url}/v1/models?limit=20`)).json()) as any;
    expect(list).to.deep.include({ has_more: false, first_id: 'model-sonnet-4.6', last_id: 'model-haiku-4.5' });
    expect(list.data.map((m: any) => m.id)).to.deep.equal(['model-sonnet-4.6', 'model-haiku-4.5']);
    expect(list.data[0]).to.include({ type: 'model', id: 'model-sonnet-4.6' }).and.to.have.property('created_at');
    const one = await fetch(`${sim.url}/v1/models/model-haiku-4.5`);
    expect(one.status).to.equal(200);
    expect(await one.json()).to.include({ type: 'model', id: 'model-haiku-4.5' });
    const unknown = await fetch(`${sim.url}/v1/models/model-none`);
    expect(unknown.status).to.equal(404);
    expect(((await unknown.json()) as any).error.type).to.equal('not_found_error');
  });

  it('answers the reachability probes (HEAD / and GET /)', async () => {
    expect((await fetch(`${sim.url}/`, { method: 'HEAD' })).status).to.equal(200);
    expect((await fetch(`${sim.url}/?probe=1`)).status).to.equal(200);
  });

  it('refuses another method on a known path with 405 and Allow, and an unknown path with 404, in the native envelope', async () => {
    const wrong = await fetch(`${sim.url}/v1/messages?beta=true`);
    expect(wrong.status).to.equal(405);
    expect(wrong.headers.get('allow')).to.equal('POST');
    expect(await wrong.json()).to.deep.include({ type: 'error' });
    const missing = await post('/v1/nothing?beta=true', prompt);
    expect(missing.status).to.equal(404);
    expect(((await missing.json()) as any).error).to.include({ type: 'not_found_error' });
  });
});
