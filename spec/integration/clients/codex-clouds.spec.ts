/**
 * Issue 43, item 7: Codex (`codex exec`, pinned in spec/clients/package.json) through the Responses
 * route of a gateway process whose only target is Amazon Bedrock, a local fake runtime that verifies
 * each SigV4 signature and answers in Bedrock's event-stream format (cloud-gateway.ts). Codex's tool
 * round trip (the model asks for a shell command, Codex runs it and sends its output) is two streamed
 * InvokeModelWithResponseStream calls; the key is billed what the fake reported.
 */
import { expect } from 'chai';
import { codexExec } from '../../helpers/codex-cli';
import { startCloudFakes, startCloudGateway, type CloudFakes, type CloudGateway } from '../../helpers/cloud-gateway';
import { roundTripHandler } from '../../helpers/responses-upstream';
import type { FakeHandler } from '../../helpers/fake-upstream';

describe('clients: Codex through a Bedrock target (Responses route)', function () {
  this.timeout(120_000);
  let fakes: CloudFakes;
  let gw: CloudGateway;
  /** The usage of each reply the handler gave (the ledger check compares them with the key's usage). */
  const reported: Array<{ input_tokens: number; output_tokens: number }> = [];
  const roundTrip = roundTripHandler({ toolName: 'exec_command', toolInput: { cmd: 'echo bedrock-$((6*7))' }, answer: 'The command printed bedrock-42.' });
  const handler: FakeHandler = (request) => {
    const reply = roundTrip(request);
    const events = reply.kind === 'stream' ? reply.events : [];
    const start = events.find((e) => 'event' in e && e.event === 'message_start') as { data: any } | undefined;
    const delta = events.filter((e) => 'event' in e && e.event === 'message_delta').pop() as { data: any } | undefined;
    const usage = reply.kind === 'json' ? (reply.body as any).usage : { ...start?.data.message.usage, output_tokens: delta?.data.usage.output_tokens };
    reported.push({ input_tokens: usage.input_tokens, output_tokens: usage.output_tokens });
    return reply;
  };

  before(async () => {
    fakes = await startCloudFakes(handler);
    gw = await startCloudGateway(fakes, [fakes.target('bedrock')]);
  });
  after(async () => {
    await gw?.stop();
    await fakes?.close();
  });

  it('runs a tool round trip through Bedrock and bills what Bedrock reported', async () => {
    const calls = () => fakes.bedrock.records.filter((r) => r.url.endsWith('/invoke-with-response-stream'));
    const result = await codexExec(gw, 'Run the echo command');
    expect(result.code, `${result.stderr}\ngateway: ${gw.output().slice(-3000)}`).to.equal(0);
    expect(result.stdout.trim()).to.equal('The command printed bedrock-42.');
    const sent = calls();
    expect(sent).to.have.length(2);
    expect(sent.every((r) => String(r.headers.authorization).startsWith('AWS4-HMAC-SHA256 '))).to.equal(true);
    // The second call carries the command's output as the tool's result.
    expect(JSON.stringify(sent[1].body.messages)).to.include('bedrock-42');
    const usage = await gw.usage(2);
    expect([usage.requests, usage.inputTokens, usage.outputTokens]).to.deep.equal([
      2, reported.reduce((sum, u) => sum + u.input_tokens, 0), reported.reduce((sum, u) => sum + u.output_tokens, 0),
    ]);
  });
});
