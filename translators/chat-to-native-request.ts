/**
 * Chat-completions request -> native messages request.
 * Source: wire-formats.md §8.1 (fields) and §8.2 (message conversion); the README section
 * "Chat-completions translation" lists every field's treatment.
 */
import { TranslationError } from './translation-error';
import { convertChatMessages } from './chat-to-native-messages';
import { convertToolChoice, convertTools } from './chat-to-native-tools';
import type { ChatCompletionRequest, ChatResponseFormat } from './chat-types';
import type { NativeMessagesRequest } from './native-types';
import { applyModelRules, type ModelCapabilities, type SamplingField, type ThinkingBudgets } from './model-capabilities';
import { addCacheBreakpoints, type CacheableRequest, type PromptCacheOptions } from './prompt-cache';

export interface ConvertChatRequestOptions {
  /** Model name to send upstream (already resolved from the catalogue). */
  upstreamModel: string;
  /** `max_tokens` to use when the request gives neither `max_completion_tokens` nor `max_tokens` (the model's output ceiling). */
  defaultMaxTokens: number;
  /** What the model accepts (config.json `models[].capabilities`); absent: fields pass as given, no thinking. */
  capabilities?: ModelCapabilities;
  /** Thinking budget per `reasoning_effort` for budget-only models (config `responses.thinkingBudgets`). Default none. */
  thinkingBudgets?: ThinkingBudgets;
  /** Mark cache breakpoints (prompt-cache.ts) with this TTL. Default: none marked. */
  promptCache?: PromptCacheOptions;
}

export interface ConvertedChatRequest {
  request: NativeMessagesRequest;
  /** Lossy conversions the client should hear about (sent in the `x-gateway-warning` header). */
  warnings: string[];
  /** Sampling fields the model refuses, dropped (`x-gateway-dropped-params`). */
  droppedParams: SamplingField[];
}

/** Native temperature range (wire-formats.md §1.1); chat allows 0 to 2. */
export const NATIVE_TEMPERATURE_RANGE = { min: 0, max: 1 } as const;

/**
 * Convert a validated chat-completions request to a native request. Fields without a native
 * counterpart are ignored (compatibility rule 2). `reasoning_effort`, sampling fields and the token
 * limit are fitted to the model's capabilities (applyModelRules, model-capabilities.ts).
 *
 * @throws GatewayError 400 (`invalid_request_error`, `param` naming the field) for `n` > 1, no turn with
 *   content, content the native format cannot take, unparsable tool-call arguments, unsupported tool types.
 */
export function convertChatRequest(body: ChatCompletionRequest, options: ConvertChatRequestOptions): ConvertedChatRequest {
  if (typeof body.n === 'number' && body.n > 1) {
    throw new TranslationError('n: only one choice per request is supported (n must be 1)', 'n');
  }
  const warnings: string[] = [];
  const { system, messages } = convertChatMessages(body.messages);
  if (messages.length === 0) {
    throw new TranslationError('messages: at least one user, assistant or tool message with content is required', 'messages');
  }
  const instruction = formatResponseFormatInstruction(body.response_format);
  if (instruction) {
    system.push(instruction);
    warnings.push(`response_format ${body.response_format!.type} is best effort (an instruction in the system prompt)`);
  }

  const request: NativeMessagesRequest = {
    model: options.upstreamModel,
    max_tokens: body.max_completion_tokens ?? body.max_tokens ?? options.defaultMaxTokens,
    messages,
  };
  if (system.length > 0) request.system = system.join('\n');
  if (body.stream === true) request.stream = true;

  if (typeof body.temperature === 'number') {
    const { temperature, warning } = clampTemperature(body.temperature);
    request.temperature = temperature;
    if (warning) warnings.push(warning);
  }
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  if (typeof body.top_k === 'number') request.top_k = body.top_k;

  const stop = convertStop(body.stop);
  if (stop.stopSequences.length > 0) request.stop_sequences = stop.stopSequences;
  if (stop.warning) warnings.push(stop.warning);

  if (typeof body.user === 'string' && body.user !== '') request.metadata = { user_id: body.user };

  Object.assign(request, convertToolFields(body));
  const clientLimit = typeof (body.max_completion_tokens ?? body.max_tokens) === 'number';
  const rules = applyModelRules(request, {
    effort: body.reasoning_effort, clientLimit, capabilities: options.capabilities,
    thinkingBudgets: options.thinkingBudgets ?? {}, effortField: 'reasoning_effort',
  });
  warnings.push(...rules.warnings);
  if (options.promptCache) addCacheBreakpoints(request as unknown as CacheableRequest, options.promptCache);
  return { request, warnings, droppedParams: rules.dropped };
}

/**
 * Clamp a chat temperature (0 to 2) into the native range (0 to 1). A clamped value comes with a
 * warning for the `x-gateway-warning` header, so the change is never silent.
 */
export function clampTemperature(value: number): { temperature: number; warning?: string } {
  const { min, max } = NATIVE_TEMPERATURE_RANGE;
  if (value >= min && value <= max) return { temperature: value };
  const temperature = Math.min(max, Math.max(min, value));
  return { temperature, warning: `temperature ${value} clamped to ${temperature} (native range is ${min} to ${max})` };
}

/**
 * `stop` (string or array) -> `stop_sequences`. Empty and whitespace-only sequences are dropped (the
 * native format does not match them) with a warning.
 */
export function convertStop(stop: string | string[] | null | undefined): { stopSequences: string[]; warning?: string } {
  if (stop === null || stop === undefined) return { stopSequences: [] };
  const all = typeof stop === 'string' ? [stop] : stop;
  const stopSequences = all.filter((sequence) => sequence.trim() !== '');
  if (stopSequences.length === all.length) return { stopSequences };
  return { stopSequences, warning: `${all.length - stopSequences.length} whitespace-only stop sequence(s) dropped` };
}

/**
 * The system-prompt instruction standing in for `response_format` (best effort: the upstream gives no
 * guarantee that the reply parses). `text` and absent formats need none.
 */
export function formatResponseFormatInstruction(format: ChatResponseFormat | null | undefined): string | undefined {
  if (!format || format.type === 'text') return undefined;
  const rule = 'Output only the JSON value: no prose before or after it and no code fences.';
  if (format.type === 'json_object') return `Respond with a single valid JSON object. ${rule}`;
  if (format.type === 'json_schema') {
    const spec = format.json_schema ?? { name: 'response' };
    const described = spec.description ? ` (${spec.description})` : '';
    const schema = spec.schema ? ` that conforms to this JSON Schema: ${JSON.stringify(spec.schema)}` : '';
    return `Respond with a single JSON value named "${spec.name}"${described}${schema}. ${rule}`;
  }
  return undefined;
}

/**
 * `tools`, `tool_choice` and `parallel_tool_calls`. Without tools there is nothing to choose from, so
 * `tool_choice` is dropped; `allowed_tools` narrows the tools sent.
 */
function convertToolFields(body: ChatCompletionRequest): Pick<NativeMessagesRequest, 'tools' | 'tool_choice'> {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return {};
  let tools = convertTools(body.tools);
  const { toolChoice, allowedTools } = convertToolChoice(body.tool_choice, body.parallel_tool_calls);
  if (allowedTools) tools = tools.filter((tool) => allowedTools.includes(tool.name));
  if (toolChoice?.type === 'tool' && !tools.some((tool) => tool.name === toolChoice.name)) {
    throw new TranslationError(`tool_choice.function.name: "${toolChoice.name}" is not one of the tools`, 'tool_choice.function.name');
  }
  if (tools.length === 0) return {};
  return toolChoice ? { tools, tool_choice: toolChoice } : { tools };
}
