/**
 * Scripted native replies for the Responses route's end-to-end tests: a fake upstream handler that
 * answers a tool round trip (a call first, text once tool results come back), with or without
 * thinking, whole or streamed, and helpers to read what the gateway billed and logged.
 */
import type { FakeHandler, RecordedRequest, StreamItem } from './fake-upstream';
import type { TestGateway } from './gateway';

/** Usage the fake upstream reports for each leg. */
export const CALL_USAGE = { input_tokens: 40, cache_read_input_tokens: 8, output_tokens: 20 };
export const ANSWER_USAGE = { input_tokens: 60, output_tokens: 9 };

export const THINKING = { type: 'thinking', thinking: 'The user wants Paris weather; call the tool.', signature: 'sig-Paris-0001' };

/** True when the last native user turn carries tool results (the second leg of a tool round trip). */
export function hasToolResults(request: RecordedRequest): boolean {
  const last = request.body.messages?.[request.body.messages.length - 1];
  return Array.isArray(last?.content) && last.content.some((block: { type: string }) => block.type === 'tool_result');
}

/** Native stream events of a whole reply (its blocks sent as one delta each). */
export function streamOf(content: Array<Record<string, any>>, stopReason: string, usage: Record<string, number>, model: string): StreamItem[] {
  const events: StreamItem[] = [{
    event: 'message_start',
    data: { type: 'message_start', message: { id: 'msg_s', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } },
  }];
  content.forEach((block, index) => {
    if (block.type === 'text') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } } });
    } else if (block.type === 'thinking') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } } });
    } else if (block.type === 'tool_use') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } } });
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  });
  events.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } } });
  events.push({ event: 'message_stop', data: { type: 'message_stop' } });
  return events;
}

export interface RoundTripOptions {
  /** The tool the model calls first (its native name). Default get_weather. */
  toolName?: string;
  toolInput?: unknown;
  /** Start the call leg with a thinking block. */
  thinking?: boolean;
  /** The final answer's text. */
  answer?: string;
}

/** A handler for a tool round trip: a call (after optional thinking) first, then the answer once tool results arrive. */
export function roundTripHandler(options: RoundTripOptions = {}): FakeHandler {
  return (request) => {
    const model = request.body.model;
    const toolsOffered = Array.isArray(request.body.tools) && request.body.tools.length > 0;
    const finalLeg = hasToolResults(request) || !toolsOffered;
    const content = finalLeg
      ? [{ type: 'text', text: options.answer ?? 'It is 18°C in Paris.' }]
      : [
        ...(options.thinking ? [THINKING] : []),
        { type: 'tool_use', id: 'toolu_01Paris', name: options.toolName ?? request.body.tools[0].name, input: options.toolInput ?? { city: 'Paris' } },
      ];
    const stopReason = finalLeg ? 'end_turn' : 'tool_use';
    const usage = finalLeg ? ANSWER_USAGE : CALL_USAGE;
    if (request.body.stream) return { kind: 'stream', events: streamOf(content, stopReason, usage, model) };
    return { kind: 'json', body: { id: 'msg_1', type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage } };
  };
}

/** The request log lines of a route so far. */
export function requestLines(gw: TestGateway, route = 'POST /v1/responses'): Array<Record<string, any>> {
  return gw.logLines.filter((line) => line.message === 'request' && line.route === route);
}

/** Wait until `count` request lines of the route were written (their settlement is then done). */
export async function waitForRequestLines(gw: TestGateway, count: number, route = 'POST /v1/responses'): Promise<Array<Record<string, any>>> {
  for (let i = 0; i < 300; i++) {
    const lines = requestLines(gw, route);
    if (lines.length >= count) return lines;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${count} request log lines for ${route}`);
}

/** Input and output tokens a key was billed this month, summed over models. */
export async function billedTokens(gw: TestGateway, keyId: string): Promise<{ input: number; output: number; requests: number }> {
  const month = new Date().toISOString().slice(0, 7);
  const usage = await gw.gateway.store.getUsage(keyId, month);
  return usage.reduce((sum, u) => ({
    input: sum.input + u.inputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens,
    output: sum.output + u.outputTokens,
    requests: sum.requests + u.requests,
  }), { input: 0, output: 0, requests: 0 });
}
