/**
 * Responses request -> native messages request.
 * Sources: openai-node `responses.ts` (ResponseCreateParams); wire-formats.md §1 (native request),
 * §8.1 (how the chat route maps the same fields). docs/responses.md lists every field's treatment.
 *
 * - `instructions`, then `system`/`developer` input messages -> `system` (joined by blank lines).
 * - `max_output_tokens` -> `max_tokens` (absent: the model's default, `defaultMaxTokens`).
 * - `temperature` (clamped to the native 0..1), `top_p`: passed, except with extended thinking
 *   (the native format refuses them together: left out, with a warning).
 * - `reasoning.effort` -> `thinking: {type: "enabled", budget_tokens}` with the budget of that effort
 *   (`thinkingBudgets`); `none` or no budget -> no thinking. The budget must stay below `max_tokens`:
 *   it is cut to `max_output_tokens - 1` (or half the model default when the client set no limit),
 *   and thinking is left out when that is under the native minimum (1024) or when `tool_choice`
 *   forces a tool (the native format refuses both together).
 * - `text.format` `json_object` / `json_schema` -> an instruction in the system text (best effort, as
 *   the chat route does with `response_format`: the native format has no guaranteed JSON mode on every
 *   model), with a warning.
 * - `safety_identifier`, else `user` -> `metadata.user_id`. `metadata`, `prompt_cache_key`, `store`,
 *   `include`, `truncation`, `service_tier`, `client_metadata`, ... have no native counterpart: ignored.
 */
import { convertResponsesInput } from './responses-items';
import { convertResponsesTools } from './responses-tools';
import { TranslationError, type NativeRequest, type ResponsesInputItem, type ResponsesRequest, type ResponsesTextFormat, type ToolNameTable } from './responses-types';

/** Thinking budget (tokens) per `reasoning.effort` value; an effort missing here turns thinking off. */
export type ThinkingBudgets = Readonly<Record<string, number>>;

/** Defaults of `responses.thinkingBudgets` in config.json. */
export const DEFAULT_THINKING_BUDGETS: ThinkingBudgets = { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32768 };

/** The smallest native `thinking.budget_tokens` (wire-formats.md §1.1). */
export const MIN_THINKING_BUDGET = 1024;

export interface ConvertResponsesRequestOptions {
  /** Model name to send upstream (already resolved from the catalogue). */
  upstreamModel: string;
  /** `max_tokens` when the request gives no `max_output_tokens`. */
  defaultMaxTokens: number;
  thinkingBudgets: ThinkingBudgets;
  /**
   * Items of the stored conversation `previous_response_id` continues (its input and output items),
   * placed before this request's input. Default none.
   */
  previousItems?: readonly ResponsesInputItem[];
}

export interface ConvertedResponsesRequest {
  request: NativeRequest;
  /** Native tool name -> the client's tool (for the reply's calls). */
  toolNames: ToolNameTable;
  /** Lossy conversions the client should hear about (`x-gateway-warning`). */
  warnings: string[];
  /** Tool types left out (no native counterpart), for the log line. */
  droppedTools: string[];
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

  const request: NativeRequest = {
    model: options.upstreamModel,
    max_tokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : options.defaultMaxTokens,
    messages: converted.messages,
  };
  if (system.length > 0) request.system = system.join('\n\n');
  if (body.stream === true) request.stream = true;

  const tools = convertResponsesTools(body);
  if (tools.tools.length > 0) request.tools = tools.tools;
  if (tools.tool_choice) request.tool_choice = tools.tool_choice;

  const thinking = chooseThinking(body.reasoning?.effort, request, options.thinkingBudgets, warnings, typeof body.max_output_tokens === 'number');
  if (thinking) request.thinking = thinking;

  if (typeof body.temperature === 'number') {
    if (thinking) warnings.push('temperature left out (not accepted with extended thinking)');
    else if (body.temperature > 1) {
      request.temperature = 1;
      warnings.push(`temperature ${body.temperature} clamped to 1 (native range is 0 to 1)`);
    } else request.temperature = Math.max(0, body.temperature);
  }
  if (typeof body.top_p === 'number') {
    if (thinking) warnings.push('top_p left out (not accepted with extended thinking)');
    else request.top_p = body.top_p;
  }
  const user = typeof body.safety_identifier === 'string' && body.safety_identifier !== '' ? body.safety_identifier : body.user;
  if (typeof user === 'string' && user !== '') request.metadata = { user_id: user };
  return { request, toolNames: tools.names, warnings, droppedTools: tools.dropped };
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

/**
 * The native thinking setting for `reasoning.effort`, or undefined (see the module comment). The
 * client's `max_output_tokens` covers reasoning and answer together (as in the Responses API), so the
 * budget may take all of it but one token; the model default (no `max_output_tokens`) is shared, half
 * at most for thinking, so a high effort does not leave the answer no room.
 */
function chooseThinking(effort: string | null | undefined, request: NativeRequest, budgets: ThinkingBudgets, warnings: string[], clientLimit: boolean): NativeRequest['thinking'] {
  if (typeof effort !== 'string') return undefined;
  const wanted = budgets[effort];
  if (wanted === undefined) return undefined;
  if (request.tool_choice?.type === 'any' || request.tool_choice?.type === 'tool') {
    warnings.push(`reasoning.effort ${effort} left out: extended thinking cannot be combined with a forced tool_choice`);
    return undefined;
  }
  const budget = Math.min(wanted, clientLimit ? request.max_tokens - 1 : Math.floor(request.max_tokens / 2));
  if (budget < MIN_THINKING_BUDGET) {
    warnings.push(`reasoning.effort ${effort} left out: max_output_tokens ${request.max_tokens} leaves no room for the minimum thinking budget (${MIN_THINKING_BUDGET})`);
    return undefined;
  }
  return { type: 'enabled', budget_tokens: budget };
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
