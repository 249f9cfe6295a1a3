/**
 * A scripted, agent-like fake native upstream for the client matrix (spec/integration/clients/).
 *
 * It accepts whatever the real API accepts (any body shape, any betas, `?beta=true`, count_tokens,
 * and HEAD/GET probes) and answers like a model in an agent loop: a turn whose last user message
 * carries no `tool_result` gets a `tool_use` for a tool the request offers (when the test's script
 * picks one), else text; the turn carrying the tool's result gets text quoting that result. Replies
 * are streamed when the request says `stream: true`, JSON otherwise (wire-formats.md §2, §3).
 * A request that makes the model think (api-rules.ts `thinkingOn`) gets a signed thinking block
 * first, as the real API sends it. Input and cache usage are what the prompt cache of api-rules.ts
 * accounts for the request (no cache reads or writes unless the request marks breakpoints), output
 * usage differs per reply, and `reported` keeps each one, so a test can compare the key's ledger with
 * what the upstream reported. The real API's refusals come before this handler (fake-upstream.ts).
 */
import { createPromptCache, thinkingOn } from './api-rules';
import type { FakeHandler, FakeReply, RecordedRequest, StreamItem } from './fake-upstream';

/** Native usage as the fake reports it (all four counters, so each one's billing is checked). */
export interface ReportedUsage {
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** The tool call the script makes on a turn: a tool the request offers, and its input. */
export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
}

export interface AgentScript {
  /**
   * The tool to call on a turn without a tool result, given the names of the tools the request
   * offers (the request is there for anything else); null answers text. Default: never a tool.
   */
  chooseTool?: (offered: string[], request: RecordedRequest) => ToolCall | null;
  /** The text of a plain answer, streamed in these pieces. Default: `TEXT_PIECES`. */
  pieces?: string[];
}

/** The default plain answer, in the pieces a stream sends it. */
export const TEXT_PIECES = ['Hello', ' from the', ' fake upstream'];

export interface AgentUpstream {
  handler: FakeHandler;
  /** The usage of every message reply so far, in order (count_tokens and probes are not billed). */
  reported: ReportedUsage[];
  /** The id of every tool_use the fake asked for, in order. */
  toolUseIds: string[];
  /** Replace the script for the next requests. */
  setScript(script: AgentScript): void;
}

/** The text a turn answers after a tool result. */
export function toolAnswer(name: string, result: string): string {
  return `Tool ${name} said: ${result}`;
}

/** The text of a `tool_result` block's content (a string, or text blocks). */
export function toolResultText(block: { content?: unknown }): string {
  const { content } = block;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { type?: string; text?: string }) => (part?.type === 'text' ? part.text ?? '' : '')).join('');
}

/** The `tool_result` blocks of the last message of a native body, if it is a user turn. */
export function lastToolResults(body: any): Array<{ tool_use_id: string; content?: unknown; is_error?: boolean }> {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  const last = messages[messages.length - 1];
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return [];
  return last.content.filter((block: { type?: string }) => block?.type === 'tool_result');
}

/** The names of the tools a native body offers. */
export function offeredTools(body: any): string[] {
  return Array.isArray(body?.tools) ? body.tools.map((tool: { name?: string }) => tool?.name).filter((n: unknown): n is string => typeof n === 'string') : [];
}

/** A probe or a path the real API would not serve as a message: answered as the real API would. */
function probeReply(request: RecordedRequest): FakeReply | null {
  const path = request.url.split('?')[0];
  if (request.method === 'HEAD' || (request.method === 'GET' && (path === '/' || path === '/v1'))) return { kind: 'json', body: {} };
  if (request.method === 'GET' && path === '/v1/models') return { kind: 'json', body: { data: [], has_more: false, first_id: null, last_id: null } };
  if (path === '/v1/messages/count_tokens') return { kind: 'json', body: { input_tokens: 42 } };
  if (request.method !== 'POST' || path !== '/v1/messages') {
    return { kind: 'json', status: 404, body: { type: 'error', error: { type: 'not_found_error', message: `${request.method} ${path} is not served by the fake upstream` } } };
  }
  return null;
}

/** Start an agent-like fake handler (give `handler` to `startTestGateway`). */
export function createAgentUpstream(initial: AgentScript = {}): AgentUpstream {
  let script = initial;
  const cache = createPromptCache();
  const reported: ReportedUsage[] = [];
  const toolUseIds: string[] = [];

  const handler: FakeHandler = (request) => {
    const probe = probeReply(request);
    if (probe) return probe;
    const body = request.body ?? {};
    const model = typeof body.model === 'string' ? body.model : 'model-sonnet-4.6';
    const n = reported.length + 1;
    // Output differs per reply, so a ledger that dropped or doubled one would not match.
    const usage: ReportedUsage = { model, ...cache.account(body), output_tokens: 10 + n };
    reported.push(usage);

    const results = lastToolResults(body);
    const call = results.length === 0 ? script.chooseTool?.(offeredTools(body), request) ?? null : null;
    let content: Array<Record<string, unknown>>;
    let pieces: string[] | null = null;
    if (results.length > 0) {
      const asked = findToolName(body, results[0].tool_use_id);
      content = [{ type: 'text', text: toolAnswer(asked, toolResultText(results[0])) }];
    } else if (call) {
      const id = `toolu_fake_${String(toolUseIds.length + 1).padStart(3, '0')}`;
      toolUseIds.push(id);
      content = [{ type: 'text', text: 'Let me check.' }, { type: 'tool_use', id, name: call.name, input: call.input }];
    } else {
      pieces = script.pieces ?? TEXT_PIECES;
      content = [{ type: 'text', text: pieces.join('') }];
    }
    if (thinkingOn(body)) content.unshift({ type: 'thinking', thinking: `Thinking about turn ${n}.`, signature: `sig_fake_${n}_${Math.random().toString(36).slice(2, 10)}` });
    const stopReason = call ? 'tool_use' : 'end_turn';
    const message = { id: `msg_fake_${n}`, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage: nativeUsage(usage) };
    return body.stream === true ? { kind: 'stream', events: streamEvents(message, pieces) } : { kind: 'json', body: message };
  };

  return { handler, reported, toolUseIds, setScript: (next) => (script = next) };
}

function nativeUsage(usage: ReportedUsage) {
  const { model: _model, ...counts } = usage;
  return counts;
}

/** The name of the tool_use with `id` in the body's assistant turns ('' when absent). */
function findToolName(body: any, id: string): string {
  for (const message of body.messages ?? []) {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) continue;
    const block = message.content.find((b: { type?: string; id?: string }) => b?.type === 'tool_use' && b.id === id);
    if (block) return block.name;
  }
  return '';
}

/**
 * The SSE events of `message`: text blocks as `pieces` (when given) or one delta, tool_use input as
 * two `input_json_delta` fragments; input and cache counts in `message_start`, output in
 * `message_delta`, as the real API reports them.
 */
function streamEvents(message: any, pieces: string[] | null): StreamItem[] {
  const usage = message.usage;
  const events: StreamItem[] = [
    { event: 'message_start', data: { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } } },
    { event: 'ping', data: { type: 'ping' } },
  ];
  message.content.forEach((block: any, index: number) => {
    if (block.type === 'text') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } } });
      for (const text of pieces ?? [block.text]) events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text } } });
    } else if (block.type === 'thinking') {
      // thinking_deltas, then one signature_delta just before content_block_stop (wire-formats.md §3).
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: block.thinking } } });
      events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } } });
    } else {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { ...block, input: {} } } });
      const json = JSON.stringify(block.input);
      const half = Math.floor(json.length / 2);
      for (const partial_json of [json.slice(0, half), json.slice(half)]) {
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } } });
      }
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  });
  events.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } } });
  events.push({ event: 'message_stop', data: { type: 'message_stop' } });
  return events;
}
