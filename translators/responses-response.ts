/**
 * Native reply -> Responses `response` object, and the pieces the stream transform shares with it:
 * the response shell echoing the request, output items, status and usage.
 * Sources: openai-node `responses.ts` (Response, ResponseOutputItem, ResponseUsage); wire-formats.md
 * §2 (native reply), §2.2 (usage).
 *
 * Output items: `text` -> `message` (one `output_text` part); `thinking` / `redacted_thinking` ->
 * `reasoning` (the thinking text as one `summary_text`; the block in `encrypted_content`, see
 * responses-reasoning.ts); `tool_use` -> `function_call` (`call_id` = the tool_use id, `arguments` its
 * input as JSON) or `custom_tool_call` for free-text tools; `server_tool_use` (web search) ->
 * `web_search_call`; result blocks of server tools are the upstream's own and are not listed.
 */
import { emptyUsage, mergeNativeUsage, readThinkingTokenCount, type NativeTokenCounts } from './usage';
import { encodeReasoning } from './responses-reasoning';
import type { NativeContentBlock, NativeMessage } from './native-types';
import type { ResponsesOutputItem, ResponsesRequest, ResponsesResponse, ResponsesUsage, ToolNameTable } from './responses-types';

export interface ResponseOptions {
  /** `resp_...` */
  id: string;
  /** Unix seconds. */
  createdAt: number;
  /** Canonical model ID. */
  model: string;
  /** The client's request (echoed fields: instructions, tools, temperature, ...). */
  request: ResponsesRequest;
  toolNames: ToolNameTable;
  /** Makes the id of an output item from its prefix (`msg`, `rs`, `fc`, `ctc`, `ws`). */
  newId(prefix: string): string;
}

/** The response object before any output: `in_progress`, no usage. */
export function createResponseShell(options: ResponseOptions): ResponsesResponse {
  const body = options.request;
  return {
    id: options.id,
    object: 'response',
    created_at: options.createdAt,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: typeof body.instructions === 'string' ? body.instructions : null,
    max_output_tokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : null,
    model: options.model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls !== false,
    previous_response_id: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    store: body.store !== false,
    temperature: typeof body.temperature === 'number' ? body.temperature : null,
    text: { format: body.text?.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: Array.isArray(body.tools) ? body.tools : [],
    top_p: typeof body.top_p === 'number' ? body.top_p : null,
    truncation: typeof body.truncation === 'string' ? body.truncation : 'disabled',
    usage: null,
    user: typeof body.user === 'string' ? body.user : null,
    metadata: body.metadata && typeof body.metadata === 'object' ? body.metadata : {},
  };
}

/**
 * Native usage -> Responses usage: input = input + cache writes + cache reads (OpenAI counts cached
 * tokens inside input), cached = cache reads, reasoning = the upstream's `thinking_tokens` when it
 * reports them (else 0).
 */
export function convertUsage(counts: NativeTokenCounts, thinkingTokens = 0): ResponsesUsage {
  const input = counts.input_tokens + counts.cache_creation_input_tokens + counts.cache_read_input_tokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: counts.cache_read_input_tokens },
    output_tokens: counts.output_tokens,
    output_tokens_details: { reasoning_tokens: thinkingTokens },
    total_tokens: input + counts.output_tokens,
  };
}


/**
 * Status of a finished reply: `max_tokens` -> incomplete `max_output_tokens` (the model really stopped
 * at the limit), `refusal` -> incomplete `content_filter`, a full context window
 * (`model_context_window_exceeded`) -> failed with `error.code` `context_length_exceeded` (what Codex
 * recovers from, see responses-stream.ts).
 */
export function mapStopReasonToStatus(stopReason: string | null): Pick<ResponsesResponse, 'status' | 'incomplete_details'> & { error?: ResponsesResponse['error'] } {
  if (stopReason === 'max_tokens') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (stopReason === 'model_context_window_exceeded') {
    return { status: 'failed', incomplete_details: null, error: { code: 'context_length_exceeded', message: 'the conversation filled the model\'s context window' } };
  }
  if (stopReason === 'refusal') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** A `function_call`, `custom_tool_call` or `local_shell_call` item for a native tool_use (input given as its JSON text). */
export function createCallItem(block: { id: string; name: string }, argumentsJson: string, toolNames: ToolNameTable, itemId: string): ResponsesOutputItem {
  const entry = toolNames.get(block.name);
  const namespace = entry?.namespace ? { namespace: entry.namespace } : {};
  if (entry?.kind === 'local_shell') return createLocalShellCall(block.id, argumentsJson, itemId);
  if (entry?.kind === 'custom') {
    let input = '';
    try {
      const parsed = JSON.parse(argumentsJson) as { input?: unknown };
      input = typeof parsed?.input === 'string' ? parsed.input : JSON.stringify(parsed);
    } catch {
      input = argumentsJson;
    }
    return { type: 'custom_tool_call', id: itemId, call_id: block.id, name: entry.name, input, ...namespace };
  }
  return { type: 'function_call', id: itemId, status: 'completed', call_id: block.id, name: entry?.name ?? block.name, arguments: argumentsJson === '' ? '{}' : argumentsJson, ...namespace };
}

/** A `local_shell_call` item for the native stand-in's input (`{command, workdir?, timeout_ms?}` as JSON text; unreadable: an empty command). */
export function createLocalShellCall(callId: string, inputJson: string, itemId: string): ResponsesOutputItem {
  let input: { command?: unknown; workdir?: unknown; timeout_ms?: unknown } = {};
  try {
    input = (JSON.parse(inputJson || '{}') ?? {}) as typeof input;
  } catch {
    // an unreadable input is an empty command (the client reports the failure)
  }
  const command = Array.isArray(input.command) ? input.command.map(String) : typeof input.command === 'string' ? [input.command] : [];
  return {
    type: 'local_shell_call', id: itemId, call_id: callId, status: 'completed',
    action: { type: 'exec', command, working_directory: typeof input.workdir === 'string' ? input.workdir : null, timeout_ms: typeof input.timeout_ms === 'number' ? input.timeout_ms : null, env: {}, user: null },
  };
}

/** The output item of one native content block, or undefined for blocks not listed (server tool results). */
export function convertBlock(block: NativeContentBlock, options: Pick<ResponseOptions, 'toolNames' | 'newId'>): ResponsesOutputItem | undefined {
  switch (block.type) {
    case 'text':
      return { type: 'message', id: options.newId('msg'), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: String(block.text ?? ''), annotations: [], logprobs: [] }] };
    case 'thinking':
    case 'redacted_thinking': {
      const text = typeof block.thinking === 'string' ? block.thinking : '';
      return { type: 'reasoning', id: options.newId('rs'), summary: text === '' ? [] : [{ type: 'summary_text', text }], encrypted_content: encodeReasoning(block) };
    }
    case 'tool_use':
      return createCallItem({ id: String(block.id), name: String(block.name) }, JSON.stringify(block.input ?? {}), options.toolNames, options.newId('fc'));
    case 'server_tool_use':
      if (block.name !== 'web_search') return undefined;
      return { type: 'web_search_call', id: options.newId('ws'), status: 'completed', action: { type: 'search', query: String((block.input as { query?: unknown })?.query ?? '') } };
    default:
      return undefined;
  }
}

/**
 * The output items as the client sees them: reasoning items keep `encrypted_content` only when the
 * client asked for it (`include`); the gateway's stored copy always keeps it.
 */
export function viewOutputForClient(output: ResponsesOutputItem[], includeEncrypted: boolean): ResponsesOutputItem[] {
  if (includeEncrypted) return output;
  return output.map((item) => (item.type === 'reasoning' ? { ...item, encrypted_content: null } : item));
}

/** A whole native reply -> the response object (full fidelity: use `viewOutputForClient` before sending). */
export function convertNativeReply(message: NativeMessage, options: ResponseOptions): ResponsesResponse {
  const response = createResponseShell(options);
  for (const block of message.content) {
    const item = convertBlock(block, options);
    if (item) response.output.push(item);
  }
  Object.assign(response, mapStopReasonToStatus(message.stop_reason));
  response.usage = convertUsage(mergeNativeUsage(emptyUsage(), message.usage), readThinkingTokenCount(message.usage));
  return response;
}
