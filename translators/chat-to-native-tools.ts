/**
 * Chat-completions `tools`, `tool_choice` and `parallel_tool_calls` -> native `tools` and `tool_choice`.
 * Source: wire-formats.md §1.3 (native tools) and §8.1 (mapping).
 */
import { TranslationError } from './translation-error';
import type { ChatTool, ChatToolChoice } from './chat-types';
import type { NativeTool, NativeToolChoice } from './native-types';

/** Schema of a function declared without `parameters` (a function with no arguments). */
const NO_PARAMETERS = { type: 'object', properties: {} };

/**
 * `{type: "function", function: {name, description, parameters}}` -> `{name, description, input_schema}`.
 * `strict` is accepted and dropped: it gives no strict-schema guarantee (compatibility rule 3).
 *
 * @throws GatewayError 400 naming `tools[i].type` for tool types other than `function`.
 */
export function convertTools(tools: ChatTool[]): NativeTool[] {
  return tools.map((tool, i) => {
    if (tool.type !== 'function' || !tool.function) {
      throw new TranslationError(`tools[${i}].type: only "function" tools are supported (got "${tool.type}")`, `tools[${i}].type`);
    }
    const { name, description, parameters } = tool.function;
    const converted: NativeTool = { name, input_schema: parameters ?? NO_PARAMETERS };
    if (description !== undefined) converted.description = description;
    return converted;
  });
}

export interface ConvertedToolChoice {
  /** Undefined: leave the native default (`auto` when tools are given). */
  toolChoice?: NativeToolChoice;
  /** From `{type: "allowed_tools"}`: the only tool names the model may see. */
  allowedTools?: string[];
}

/**
 * `tool_choice`: `none` / `auto` / `required` / `{type: "function"}` -> `none` / `auto` / `any` / `tool`;
 * `{type: "allowed_tools"}` -> `auto` or `any` over the listed tools only.
 * `parallel_tool_calls: false` -> `disable_parallel_tool_use: true` (an `auto` choice is created when none
 * is given; a `none` choice takes no flag).
 *
 * @throws GatewayError 400 naming `tool_choice` for a value outside these forms.
 */
export function convertToolChoice(choice: ChatToolChoice | null | undefined, parallelToolCalls?: boolean | null): ConvertedToolChoice {
  const result = convertChoiceValue(choice);
  if (parallelToolCalls === false && result.toolChoice?.type !== 'none') {
    result.toolChoice = { ...(result.toolChoice ?? { type: 'auto' }), disable_parallel_tool_use: true } as NativeToolChoice;
  }
  return result;
}

function convertChoiceValue(choice: ChatToolChoice | null | undefined): ConvertedToolChoice {
  if (choice === null || choice === undefined) return {};
  if (choice === 'none') return { toolChoice: { type: 'none' } };
  if (choice === 'auto') return { toolChoice: { type: 'auto' } };
  if (choice === 'required') return { toolChoice: { type: 'any' } };
  if (typeof choice === 'object' && choice.type === 'function') {
    const name = (choice as { function?: { name?: unknown } }).function?.name;
    if (typeof name === 'string' && name) return { toolChoice: { type: 'tool', name } };
    throw new TranslationError('tool_choice.function.name: field required', 'tool_choice.function.name');
  }
  if (typeof choice === 'object' && choice.type === 'allowed_tools') {
    const allowed = (choice as { allowed_tools?: { mode?: unknown; tools?: unknown } }).allowed_tools;
    if (!allowed || !Array.isArray(allowed.tools) || (allowed.mode !== 'auto' && allowed.mode !== 'required')) {
      throw new TranslationError('tool_choice.allowed_tools: needs mode "auto" or "required" and a tools array', 'tool_choice.allowed_tools');
    }
    const names = allowed.tools
      .map((tool: { function?: { name?: unknown } }) => tool?.function?.name)
      .filter((name): name is string => typeof name === 'string');
    return { toolChoice: { type: allowed.mode === 'required' ? 'any' : 'auto' }, allowedTools: names };
  }
  throw new TranslationError(
    'tool_choice: must be "none", "auto", "required", {"type":"function"} or {"type":"allowed_tools"}',
    'tool_choice',
  );
}
