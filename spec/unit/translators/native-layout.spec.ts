/** The native replies' closing members read without a full parse: the same as a parse, or nothing. */
import { expect } from 'chai';
import fc from 'fast-check';
import { readMessageTail } from '../../../translators/native-layout';

describe('a whole native message read from its closing members', () => {
  const usage = fc.record({
    input_tokens: fc.nat(), output_tokens: fc.nat(), cache_creation_input_tokens: fc.nat(), cache_read_input_tokens: fc.nat(),
    cache_creation: fc.record({ ephemeral_5m_input_tokens: fc.nat(), ephemeral_1h_input_tokens: fc.nat() }),
    service_tier: fc.constantFrom('standard', 'priority'),
  }, { requiredKeys: ['input_tokens', 'output_tokens'] });
  // Content that holds the same member names, nested: they must never be taken for the message's.
  const trap = fc.record({ stop_reason: fc.string(), stop_sequence: fc.constant(null), usage: fc.record({ output_tokens: fc.nat() }) });
  const content = fc.array(fc.oneof(
    fc.record({ type: fc.constant('text'), text: fc.string({ unit: 'binary' }) }),
    fc.record({ type: fc.constant('tool_use'), id: fc.constant('toolu_1'), name: fc.constant('t'), input: trap }),
  ), { maxLength: 3 });
  const message = fc.record({
    id: fc.constant('msg_1'), type: fc.constant('message'), role: fc.constant('assistant'), model: fc.constant('m'), content,
    stop_reason: fc.constantFrom('end_turn', 'tool_use', 'max_tokens', null), stop_sequence: fc.constantFrom(null, 'STOP', 'é"}'), usage,
  });

  it('reads the API layout, as a parse would', () => {
    fc.assert(fc.property(message, fc.constantFrom('', '\n', ' \n'), (body, trailing) => {
      const tail = readMessageTail(Buffer.from(JSON.stringify(body) + trailing));
      expect(tail).to.deep.equal({ usage: body.usage, stopReason: body.stop_reason });
    }), { numRuns: 1000 });
  });

  it('reads any other layout as a parse would, or not at all', () => {
    const reordered = message.chain((body) => fc.shuffledSubarray(Object.keys(body), { minLength: Object.keys(body).length }).map((order) => {
      const out: Record<string, unknown> = {};
      for (const name of order) out[name] = (body as Record<string, unknown>)[name];
      return out;
    }));
    const layouts = fc.oneof(
      reordered.map((body) => JSON.stringify(body)),
      message.map((body) => JSON.stringify(body, null, 2)),
      message.map((body) => JSON.stringify({ ...body, container: null })),
      message.map((body) => JSON.stringify({ wrapper: body })),
      message.map((body) => JSON.stringify(body).slice(0, -1)),
    );
    fc.assert(fc.property(layouts, (text) => {
      const tail = readMessageTail(Buffer.from(text));
      if (tail === undefined) return;
      const parsed = JSON.parse(text);
      expect(tail).to.deep.equal({ usage: parsed.usage, stopReason: parsed.stop_reason });
    }), { numRuns: 2000 });
  });
});
