/**
 * The input bound: the most input tokens the upstream can bill a request for, counting what the
 * gateway sends and what the upstream adds on its own. One function (`boundInput`) serves every
 * billed route (native, chat, Responses) and each request of a Message Batch (lib/billing/worst-case.ts).
 *
 * input bound = ceil(bytes sent / reservation.bytesPerInputToken) + reservation.overheadInputTokens
 *   (bytes sent: the body, a stored conversation it continues, signed thinking the gateway restores)
 * + IMAGE_INPUT_TOKENS per image part (an image URL or file id is a few bytes billed for its pixels)
 * + per file a content block names (`source: {type: "file"}`, Responses `input_file`, chat `file`):
 *   an image file IMAGE_INPUT_TOKENS; a text file its stored size in tokens (one a byte at most);
 *   any other file (PDF: text and an image per page) and any file of unknown size the context window
 * + per document fetched from a URL (`source: {type: "url"}`, Responses `file_url`): the context window
 * + per PDF sent inline (native `source: {type: "base64"}` of a PDF, Responses `input_file.file_data`, chat
 *   `file.file_data`): the context window, as a PDF named by id (its pages are billed as text and an image
 *   each, so its bytes do not bound it)
 * + per sampling step a server tool can add (web search, web fetch, code execution, tool search,
 *   MCP servers: their results are input of the next step, which reads the whole context again): the
 *   context window; steps = the tool's `max_uses`, else reservation.webSearchesPerRequest.
 * The walk over the conversation uses an explicit stack: a body nested 20,000 levels deep costs
 * iterations, never the call stack.
 */
import type { GatewayConfig, ModelConfig } from '../config';

/**
 * Input tokens held per image part: an image whose URL is a few bytes of JSON is billed for its pixels.
 * The native API resizes images past about 1.15 megapixels, so one costs at most about 1600 tokens
 * (tokens = width x height / 750; https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs).
 */
export const IMAGE_INPUT_TOKENS = 1600;

/**
 * The context window assumed for a model whose catalogue entry gives none (`capabilities.contextWindow`),
 * and for a native request asking for the 1M-token window (`anthropic-beta: context-1m-...`): the
 * largest any model offers (https://platform.claude.com/docs/en/build-with-claude/context-windows).
 */
export const LARGEST_CONTEXT_WINDOW = 1_000_000;

/** What the gateway knows of an uploaded file (its pin, routes/files.ts): the upstream's `size_bytes` and `mime_type`. */
export interface FileFacts {
  sizeBytes?: number;
  mimeType?: string;
}

/**
 * A request's input bound in tokens, with what it is made of (for the words of a 402, put together
 * only when one is sent: `describeInputBound`).
 */
export interface InputBound {
  tokens: number;
  bytes: number;
  bodyTokens: number;
  images: number;
  fileTokens: number;
  files: string[];
  fetched: number;
  /** PDFs sent inline (count_tokens sees them; a URL's document it does not). */
  inlinePdfs: number;
  window: number;
  toolSteps: ReadonlyMap<string, number>;
}

/** Part types that carry an image: chat `image_url`, Responses `input_image`, native `image`. */
const IMAGE_PART_TYPES = new Set(['image_url', 'input_image', 'image']);

/** Server tool types (prefixes of `tools[].type`) whose results the upstream adds as input. */
const SERVER_TOOL_PREFIXES = ['web_search', 'web_fetch', 'code_execution', 'bash_code_execution', 'text_editor_code_execution', 'tool_search'];

/** The context window of `model` for this request (`wideWindow`: the request asks for the 1M window). */
export function contextWindowOf(model: ModelConfig, wideWindow = false): number {
  const own = model.capabilities?.contextWindow ?? LARGEST_CONTEXT_WINDOW;
  return wideWindow ? Math.max(own, LARGEST_CONTEXT_WINDOW) : own;
}

/** Whether a native request's `anthropic-beta` header asks for the 1M-token context window. */
export function asksWideWindow(header: string | string[] | undefined): boolean {
  return header !== undefined && String(header).includes('context-1m');
}

/** Tokens a file of these facts can be billed for, at most (see the module comment). */
function fileTokens(facts: FileFacts | undefined, window: number): number {
  const type = facts?.mimeType ?? '';
  if (type.startsWith('image/')) return IMAGE_INPUT_TOKENS;
  if (type.startsWith('text/') && typeof facts?.sizeBytes === 'number') return Math.min(window, facts.sizeBytes);
  return window;
}

/** What the content blocks of a conversation add to its bound: image parts, files, fetched documents. */
interface ContentTally {
  images: number;
  fileTokens: number;
  files: string[];
  fetched: number;
  inlinePdfs: number;
}

/** Count a file a block names by id (an image file is an image part). */
function tallyFile(tally: ContentTally, id: string, files: ReadonlyMap<string, FileFacts> | undefined, window: number): void {
  const facts = files?.get(id);
  if (facts?.mimeType?.startsWith('image/')) {
    tally.images += 1;
    return;
  }
  tally.fileTokens += fileTokens(facts, window);
  tally.files.push(id);
}

/**
 * Tally the content blocks under `roots` (messages, system, input items, stored items) with an explicit
 * stack: image parts (any source), files named by id (native `source.type: "file"`, Responses
 * `input_file.file_id`, chat `file.file_id`), documents fetched from a URL (native `source.type: "url"`,
 * Responses `input_file.file_url`); a block's `content`, `output` and a document's `source.content` are
 * walked, text is not.
 */
function tallyContent(roots: unknown[], files: ReadonlyMap<string, FileFacts> | undefined, window: number): ContentTally {
  const tally: ContentTally = { images: 0, fileTokens: 0, files: [], fetched: 0, inlinePdfs: 0 };
  const stack = roots;
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i += 1) if (typeof value[i] === 'object') stack.push(value[i]);
      continue;
    }
    const block = value as Record<string, any>;
    const type = block.type;
    if (type === 'text' || type === 'input_text' || type === 'output_text') continue;
    if (IMAGE_PART_TYPES.has(type)) {
      tally.images += 1;
    } else if (type === 'document') {
      const source = block.source;
      if (source?.type === 'file' && typeof source.file_id === 'string') tallyFile(tally, source.file_id, files, window);
      else if (source?.type === 'url') tally.fetched += 1;
      else if (source?.type === 'base64' && source.media_type === 'application/pdf') tally.inlinePdfs += 1;
      else if (source?.type === 'content') stack.push(source.content);
    } else if (type === 'input_file') {
      if (typeof block.file_id === 'string') tallyFile(tally, block.file_id, files, window);
      else if (typeof block.file_url === 'string') tally.fetched += 1;
      else if (typeof block.file_data === 'string') tally.inlinePdfs += 1;
    } else if (type === 'file' && typeof block.file?.file_id === 'string') {
      tallyFile(tally, block.file.file_id, files, window);
    } else if (type === 'file' && typeof block.file?.file_data === 'string') {
      tally.inlinePdfs += 1;
    } else {
      if (typeof block.content === 'object') stack.push(block.content);
      if (typeof block.output === 'object') stack.push(block.output);
    }
  }
  return tally;
}

const NO_STEPS: ReadonlyMap<string, number> = new Map();

/**
 * Sampling steps the server tools a body offers can add (`tools[]` of SERVER_TOOL_PREFIXES: `max_uses`,
 * else `defaultUses`; each MCP server of `mcp_servers`: `defaultUses`), by tool type.
 */
export function serverToolSteps(body: unknown, defaultUses: number): ReadonlyMap<string, number> {
  const { tools, mcp_servers: mcpServers } = (body ?? {}) as { tools?: unknown; mcp_servers?: unknown };
  if (tools === undefined && mcpServers === undefined) return NO_STEPS;
  const steps = new Map<string, number>();
  if (Array.isArray(tools)) {
    for (const tool of tools) {
      const type = (tool as { type?: unknown } | null)?.type;
      if (typeof type !== 'string' || !SERVER_TOOL_PREFIXES.some((prefix) => type.startsWith(prefix))) continue;
      const maxUses = (tool as { max_uses?: unknown }).max_uses;
      const uses = typeof maxUses === 'number' && Number.isInteger(maxUses) && maxUses >= 0 ? maxUses : defaultUses;
      const name = type.replace(/_\d{8}$/, '');
      steps.set(name, (steps.get(name) ?? 0) + uses);
    }
  }
  if (Array.isArray(mcpServers) && mcpServers.length > 0) steps.set('mcp_servers', mcpServers.length * defaultUses);
  return steps;
}

/** Server tool requests a request can be billed for at a per-request price, at most (pricing.ts: `webSearch`, `webFetch`, `codeExecution`). */
export interface ServerToolRequests {
  webSearch: number;
  webFetch: number;
  codeExecution: number;
}

const NO_TOOL_REQUESTS: ServerToolRequests = Object.freeze({ webSearch: 0, webFetch: 0, codeExecution: 0 });

/**
 * The priced server tool requests of a body's server tool steps (`serverToolSteps`): each use of a
 * web search tool is a search, of a web fetch tool a fetch, of a code execution tool (`code_execution_*`,
 * and its `bash_`/`text_editor_` forms) an execution; tool search and MCP servers have no per-request price.
 */
export function countServerToolRequests(steps: ReadonlyMap<string, number>): ServerToolRequests {
  if (steps.size === 0) return NO_TOOL_REQUESTS;
  const requests = { webSearch: 0, webFetch: 0, codeExecution: 0 };
  for (const [name, uses] of steps) {
    if (name.startsWith('web_search')) requests.webSearch += uses;
    else if (name.startsWith('web_fetch')) requests.webFetch += uses;
    else if (name.includes('code_execution')) requests.codeExecution += uses;
  }
  return requests;
}

/**
 * The input bound of a request (see the module comment).
 * @param body the body as the client sent it (any of the three formats, or a batch request's `params`)
 * @param options.bytes bytes sent: the body plus what the gateway adds (stored conversation, restored thinking)
 * @param options.extra more conversation to walk (a stored conversation's items)
 * @param options.files facts of the files the body names, where known (absent: the context window each)
 * @param options.contextWindow the model's context window for this request, tokens (contextWindowOf)
 */
export function boundInput(body: unknown, options: {
  bytes: number; reservation: GatewayConfig['reservation']; contextWindow: number; extra?: unknown; files?: ReadonlyMap<string, FileFacts>;
}): InputBound {
  const { reservation, contextWindow: window } = options;
  const bodyTokens = Math.ceil(options.bytes / reservation.bytesPerInputToken) + reservation.overheadInputTokens;
  const { messages, system, input } = (body ?? {}) as { messages?: unknown; system?: unknown; input?: unknown };
  const tally = tallyContent([messages, system, input, options.extra], options.files, window);
  const toolSteps = serverToolSteps(body, reservation.webSearchesPerRequest);
  let steps = 0;
  for (const uses of toolSteps.values()) steps += uses;
  const tokens = bodyTokens + tally.images * IMAGE_INPUT_TOKENS + tally.fileTokens + (tally.fetched + tally.inlinePdfs + steps) * window;
  return {
    tokens, bytes: options.bytes, bodyTokens, images: tally.images, fileTokens: tally.fileTokens, files: tally.files, fetched: tally.fetched, inlinePdfs: tally.inlinePdfs, window, toolSteps,
  };
}

/** A count with thousands separators, as a 402 shows it. */
function figure(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * The 402's words for a bound, each part that adds to it:
 * `input bound 151,024 tokens (1,024 for 196 bytes sent; 150,000 from file(s) file_...)`.
 */
export function describeInputBound(bound: InputBound): string {
  const parts = [`${figure(bound.bodyTokens)} for ${figure(bound.bytes)} bytes sent`];
  if (bound.images > 0) parts.push(`${figure(bound.images * IMAGE_INPUT_TOKENS)} for ${bound.images} image(s) at ${IMAGE_INPUT_TOKENS} each`);
  if (bound.files.length > 0) {
    const named = bound.files.slice(0, 3).map((id) => id.slice(0, 64)).join(', ') + (bound.files.length > 3 ? ', ...' : '');
    parts.push(`${figure(bound.fileTokens)} from file(s) ${named}`);
  }
  if (bound.inlinePdfs > 0) parts.push(`${figure(bound.inlinePdfs * bound.window)} for ${bound.inlinePdfs} PDF(s) sent inline (the context window each)`);
  if (bound.fetched > 0) parts.push(`${figure(bound.fetched * bound.window)} for ${bound.fetched} document(s) fetched from a URL (the context window each)`);
  for (const [tool, steps] of bound.toolSteps) {
    if (steps > 0) parts.push(`${figure(steps * bound.window)} for ${tool} results (${steps} use(s) x the ${figure(bound.window)}-token context window)`);
  }
  return `input bound ${figure(bound.tokens)} tokens (${parts.join('; ')})`;
}
