/**
 * Responses request -> native messages request.
 * Sources: openai-node `responses.ts` (ResponseCreateParams); wire-formats.md §1 (native request),
 * §8.1 (how the chat route maps the same fields). docs/responses.md lists every field's treatment.
 *
 * - `instructions`, then `system`/`developer` input messages -> `system` (joined by blank lines).
 * - `max_output_tokens` -> `max_tokens` (absent: the model's default, `defaultMaxTokens`).
 * - `temperature` (clamped to the native 0..1), `top_p`: passed, unless the model refuses them
 *   (applyModelRules: dropped, named in `x-gateway-dropped-params`).
 * - `reasoning.effort` -> adaptive thinking plus `output_config.effort`, or a budget
 *   (`thinkingBudgets`) on budget-only models, as the model's capabilities say (model-capabilities.ts);
 *   `none`/`minimal` -> no thinking where the model allows it.
 * - cache breakpoints on the last tool, the system prompt and the end of the conversation so far
 *   (prompt-cache.ts), when `promptCache` is given.
 * - no `max_output_tokens` -> the model's output ceiling (`defaultMaxTokens`); a larger one is lowered to it.
 * - `text.format` `json_object` / `json_schema` -> an instruction in the system text (best effort, as
 *   the chat route does with `response_format`: the native format has no guaranteed JSON mode on every
 *   model), with a warning.
 * - `safety_identifier`, else `user` -> `metadata.user_id`. `metadata`, `store`,
 *   `include`, `truncation`, `service_tier`, `client_metadata`, ... have no native counterpart: ignored.
 */
import { convertResponsesInput } from './responses-items';
import { convertResponsesTools } from './responses-tools';
import { applyModelRules, type ModelCapabilities, type SamplingField, type ThinkingBudgets } from './model-capabilities';
import { addCacheBreakpoints, type CacheableRequest, type PromptCacheOptions } from './prompt-cache';
import type { NativeMessagesRequest } from './native-types';
import { TranslationError, type ResponsesInputItem, type ResponsesRequest, type ResponsesTextFormat, type ToolNameTable } from './responses-types';

export type { ThinkingBudgets } from './model-capabilities';

/** Defaults of `responses.thinkingBudgets` in config.json (`none` and `minimal` mean no thinking). */
export const DEFAULT_THINKING_BUDGETS: ThinkingBudgets = { low: 2048, medium: 8192, high: 16384, xhigh: 32768, max: 65536 };

export interface ConvertResponsesRequestOptions {
  /** Model name to send upstream (already resolved from the catalogue). */
  upstreamModel: string;
  /** `max_tokens` when the request gives no `max_output_tokens`. */
  defaultMaxTokens: number;
  thinkingBudgets: ThinkingBudgets;
  /** What the model accepts (config.json `models[].capabilities`); absent: fields pass as given, no thinking. */
  capabilities?: ModelCapabilities;
  /** Mark cache breakpoints (prompt-cache.ts) with this TTL. Default: none marked. */
  promptCache?: PromptCacheOptions;
  /**
   * Items of the stored conversation `previous_response_id` continues (its input and output items),
   * placed before this request's input. Default none.
   */
  previousItems?: readonly ResponsesInputItem[];
}

export interface ConvertedResponsesRequest {
  request: NativeMessagesRequest;
  /** Native tool name -> the client's tool (for the reply's calls). */
  toolNames: ToolNameTable;
  /** Lossy conversions the client should hear about (`x-gateway-warning`). */
  warnings: string[];
  /** Tool types left out (no native counterpart), for the log line. */
  droppedTools: string[];
  /** Sampling fields the model refuses, dropped (`x-gateway-dropped-params`). */
  droppedParams: SamplingField[];
}

/**
 * Convert a validated Responses request.
 * @throws TranslationError naming the field when the input cannot be converted or has no turn
 */
export function convertResponsesRequest(body: ResponsesRequest, options: ConvertResponsesRequestOptions): ConvertedResponsesRequest {
  refuseUnservedFeatures(body);
  const input: ResponsesInputItem[] = [
    ...(options.previousItems ?? []),
    ...(typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input } as ResponsesInputItem] : body.input ?? []),
  ];
  const converted = convertResponsesInput(input);
  const warnings = converted.warnings;
  if (converted.messages.length === 0) {
    throw new TranslationError('input: at least one user message, function call output or assistant item with content is required', 'input');
  }
  const system: string[] = [];
  if (typeof body.instructions === 'string' && body.instructions !== '') system.push(body.instructions);
  system.push(...converted.system);
  const formatInstruction = formatTextFormatInstruction(body.text?.format);
  if (formatInstruction) {
    system.push(formatInstruction);
    warnings.push(`text.format ${body.text!.format!.type} is best effort (an instruction in the system prompt)`);
  }

  const request: NativeMessagesRequest = {
    model: options.upstreamModel,
    max_tokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : options.defaultMaxTokens,
    messages: converted.messages,
  };
  if (system.length > 0) request.system = system.join('\n\n');
  if (body.stream === true) request.stream = true;

  const tools = convertResponsesTools(body);
  if (tools.tools.length > 0) request.tools = tools.tools;
  if (tools.tool_choice) request.tool_choice = tools.tool_choice;

  if (typeof body.temperature === 'number') {
    if (body.temperature > 1) warnings.push(`temperature ${body.temperature} clamped to 1 (native range is 0 to 1)`);
    request.temperature = Math.min(1, Math.max(0, body.temperature));
  }
  if (typeof body.top_p === 'number') request.top_p = body.top_p;
  const rules = applyModelRules(request, {
    effort: body.reasoning?.effort, clientLimit: typeof body.max_output_tokens === 'number', capabilities: options.capabilities,
    thinkingBudgets: options.thinkingBudgets, effortField: 'reasoning.effort',
  });
  warnings.push(...rules.warnings);
  if (options.promptCache) addCacheBreakpoints(request as unknown as CacheableRequest, options.promptCache);
  const user = typeof body.safety_identifier === 'string' && body.safety_identifier !== '' ? body.safety_identifier : body.user;
  if (typeof user === 'string' && user !== '') request.metadata = { user_id: user };
  return { request, toolNames: tools.names, warnings, droppedTools: tools.dropped, droppedParams: rules.dropped };
}

/**
 * Fields that change what the reply means and that the gateway cannot honour: refused rather than
 * ignored, since ignoring them would silently drop context (`conversation`, `prompt`) or promise a
 * behaviour (`background`) the client would then wait for.
 * @throws TranslationError naming the field
 */
function refuseUnservedFeatures(body: ResponsesRequest): void {
  if (body.conversation !== undefined && body.conversation !== null) {
    throw new TranslationError('conversation: the Conversations API is not served by this gateway; continue with previous_response_id', 'conversation');
  }
  if (body.prompt !== undefined && body.prompt !== null) {
    throw new TranslationError('prompt: stored prompt templates are not served by this gateway; send instructions and input', 'prompt');
  }
  if (body.background === true) {
    throw new TranslationError('background: background responses are not served by this gateway; send the request without it (stream for long replies)', 'background');
  }
}

/** The system-prompt instruction standing in for `text.format` (none for `text` or absent). */
export function formatTextFormatInstruction(format: ResponsesTextFormat | null | undefined): string | undefined {
  if (!format || format.type === 'text') return undefined;
  const rule = 'Output only the JSON value: no prose before or after it and no code fences.';
  if (format.type === 'json_object') return `Respond with a single valid JSON object. ${rule}`;
  if (format.type === 'json_schema') {
    const described = format.description ? ` (${format.description})` : '';
    const schema = format.schema ? ` that conforms to this JSON Schema: ${JSON.stringify(format.schema)}` : '';
    return `Respond with a single JSON value named "${format.name ?? 'response'}"${described}${schema}. ${rule}`;
  }
  return undefined;
}
