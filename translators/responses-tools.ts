/**
 * Responses `tools`, `tool_choice` and `parallel_tool_calls` -> native `tools` and `tool_choice`.
 * Sources: openai-node `responses.ts` (Tool, ToolChoiceOptions, ToolChoiceFunction,
 * ToolChoiceAllowed, NamespaceTool, CustomTool); wire-formats.md §1.3 (native tools, server tools).
 *
 * Mapped: `function`; `custom` (free text: a native tool taking `{input: string}`, its `format`
 * grammar, such as the Lark grammar of Codex's apply_patch, written into the description so the model
 * follows it); `namespace` (its function and custom tools, named `<namespace>__<name>`); `local_shell`
 * (Codex's shell: a native tool taking the argv list, replied as `local_shell_call`); `web_search*`
 * (the native web search server tool). Every other type (`computer_use_preview`, `file_search`, `mcp`,
 * `image_generation`, `code_interpreter`, `tool_search`, ...) has no faithful native counterpart: it is
 * left out and named in `dropped`, never refused, since clients such as Codex always send them.
 */
import {
  TranslationError,
  type ResponsesCustomTool, type ResponsesFunctionTool, type ResponsesRequest, type ToolNameEntry,
} from './responses-types';
import type { NativeServerTool, NativeTool, NativeToolChoice } from './native-types';

/** The native web search server tool (wire-formats.md §1.3). */
export const NATIVE_WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search' } as const;

const WEB_SEARCH_TYPES = new Set(['web_search', 'web_search_preview', 'web_search_2025_08_26', 'web_search_preview_2025_03_11']);

/** Separator between a namespace and a tool name in the native tool name. */
export const NAMESPACE_SEPARATOR = '__';

/** The native stand-in for `local_shell` (codex-rs LocalShellExecAction: command, working_directory, timeout_ms). */
export const LOCAL_SHELL_TOOL: NativeTool = {
  name: 'local_shell',
  description: 'Runs a command on the user\'s machine and returns its output. `command` is the argv list (e.g. ["bash", "-lc", "ls"]).',
  input_schema: {
    type: 'object',
    properties: {
      command: { type: 'array', items: { type: 'string' }, description: 'The command and its arguments.' },
      workdir: { type: 'string', description: 'The working directory.' },
      timeout_ms: { type: 'integer', description: 'Longest run, in milliseconds.' },
    },
    required: ['command'],
  },
};

/** The schema of the native stand-in for a free-text (`custom`) tool. */
export const CUSTOM_TOOL_SCHEMA = {
  type: 'object',
  properties: { input: { type: 'string', description: 'The tool input, as free text.' } },
  required: ['input'],
};

export interface ConvertedTools {
  tools: Array<NativeTool | NativeServerTool>;
  tool_choice?: NativeToolChoice;
  /** Native tool name -> the client's tool. */
  names: Map<string, ToolNameEntry>;
  /** Tool types left out (no native counterpart), for the log line. */
  dropped: string[];
}

/** The native name of a tool (namespaced tools joined with `__`). */
export function nativeToolName(name: string, namespace?: string): string {
  return namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name;
}

function convertFunction(tool: ResponsesFunctionTool | ResponsesCustomTool, namespace: string | undefined, names: Map<string, ToolNameEntry>, namespaceDescription?: string): NativeTool {
  const name = nativeToolName(tool.name, namespace);
  const prefix = namespaceDescription ? `${namespaceDescription}\n` : '';
  if (tool.type === 'custom') {
    names.set(name, { name: tool.name, namespace, kind: 'custom' });
    const description = `${prefix}${tool.description ?? ''}${describeFormat(tool.format)}`.trim();
    return { name, ...(description ? { description } : {}), input_schema: CUSTOM_TOOL_SCHEMA };
  }
  names.set(name, { name: tool.name, namespace, kind: 'function' });
  const description = `${prefix}${tool.description ?? ''}`.trim();
  const schema = tool.parameters && typeof tool.parameters === 'object' ? tool.parameters : { type: 'object', properties: {} };
  return { name, ...(description ? { description } : {}), input_schema: { type: 'object', ...schema } };
}

/**
 * The part of a custom tool's description that carries its `format` (openai-node CustomToolInputFormat):
 * a grammar (`{type: "grammar", syntax: "lark" | "regex", definition}`) is written out for the model to
 * follow; `text` or none adds nothing.
 */
export function describeFormat(format: unknown): string {
  const f = format as { type?: unknown; syntax?: unknown; definition?: unknown } | null | undefined;
  if (f?.type !== 'grammar' || typeof f.definition !== 'string' || f.definition === '') return '';
  const syntax = typeof f.syntax === 'string' ? f.syntax : 'lark';
  return `\n\nThe input must be free text matching this ${syntax} grammar exactly:\n${f.definition}`;
}

/**
 * Convert the tool fields of a request. Without tools `tool_choice` is dropped (nothing to choose).
 * @throws TranslationError when `tool_choice` names a tool that is not among the tools
 */
export function convertResponsesTools(body: Pick<ResponsesRequest, 'tools' | 'tool_choice' | 'parallel_tool_calls'>): ConvertedTools {
  const names = new Map<string, ToolNameEntry>();
  const dropped: string[] = [];
  let tools: Array<NativeTool | NativeServerTool> = [];
  (body.tools ?? []).forEach((raw) => {
    const tool = raw as Record<string, any>;
    if (tool.type === 'function' || tool.type === 'custom') {
      tools.push(convertFunction(tool as ResponsesFunctionTool, undefined, names));
    } else if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      const namespace = String(tool.name);
      for (const inner of tool.tools as Array<Record<string, any>>) {
        if (inner?.type === 'function' || inner?.type === 'custom') tools.push(convertFunction(inner as ResponsesFunctionTool, namespace, names, tool.description as string | undefined));
        else dropped.push(`${namespace}.${String(inner?.type)}`);
      }
    } else if (tool.type === 'local_shell') {
      if (!names.has(LOCAL_SHELL_TOOL.name)) tools.push({ ...LOCAL_SHELL_TOOL });
      names.set(LOCAL_SHELL_TOOL.name, { name: LOCAL_SHELL_TOOL.name, kind: 'local_shell' });
    } else if (WEB_SEARCH_TYPES.has(tool.type)) {
      if (!tools.some((t) => t.name === NATIVE_WEB_SEARCH.name)) tools.push({ ...NATIVE_WEB_SEARCH });
    } else {
      dropped.push(String(tool.type));
    }
  });

  const choice = body.tool_choice as string | Record<string, any> | undefined;
  let toolChoice: NativeToolChoice | undefined;
  if (choice === 'none') toolChoice = { type: 'none' };
  else if (choice === 'required') toolChoice = { type: 'any' };
  else if (choice === 'auto') toolChoice = { type: 'auto' };
  else if (choice && typeof choice === 'object') {
    if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string') {
      const name = nativeToolName(choice.name, typeof choice.namespace === 'string' ? choice.namespace : undefined);
      if (!names.has(name)) throw new TranslationError(`tool_choice.name: "${choice.name}" is not one of the tools`, 'tool_choice.name');
      toolChoice = { type: 'tool', name };
    } else if (choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
      const allowed = new Set((choice.tools as Array<{ type: string; name?: string }>).map((t) => (WEB_SEARCH_TYPES.has(t.type) ? NATIVE_WEB_SEARCH.name : String(t.name))));
      tools = tools.filter((tool) => allowed.has(tool.name));
      toolChoice = { type: choice.mode === 'required' ? 'any' : 'auto' };
    } else if (WEB_SEARCH_TYPES.has(choice.type)) {
      toolChoice = { type: 'tool', name: NATIVE_WEB_SEARCH.name };
    }
  }
  if (tools.length === 0) return { tools, names, dropped };
  if (body.parallel_tool_calls === false && toolChoice?.type !== 'none') {
    toolChoice = { ...(toolChoice ?? { type: 'auto' }), disable_parallel_tool_use: true } as NativeToolChoice;
  }
  return toolChoice ? { tools, tool_choice: toolChoice, names, dropped } : { tools, names, dropped };
}
