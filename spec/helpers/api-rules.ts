/**
 * The rules the real native API judges a `POST /v1/messages` body by, per model, for the tests' fake
 * upstreams: what it refuses (with the status and message it answers) and what its prompt cache
 * reads and writes. Written from the provider's documentation, independently of the gateway's
 * config.json, so a wrong catalogue entry fails a test instead of confirming itself. Each rule names
 * its page. A model the table does not list is judged by the model-independent rules only.
 */
import { createHash } from 'node:crypto';
import type { FakeReply, RecordedRequest } from './fake-upstream';

/** What the API accepts of one model. */
interface ApiModel {
  /** `adaptive`: `thinking.type: "enabled"` is refused; `budget`: adaptive and effort refused; `both`. */
  thinking: 'adaptive' | 'budget' | 'both';
  /** `on`: thinks unasked, `disabled` only at effort high or below; `always`: `disabled` refused. */
  thinkingDefault: 'off' | 'on' | 'always';
  efforts: string[];
  sampling: string[];
  /** `temperature` and `top_p` refused together. */
  samplingExclusive: boolean;
  maxOutputTokens: number;
  minCacheableTokens: number;
}

const ALL_EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'];
const ADAPTIVE_ONLY = { thinking: 'adaptive', efforts: ALL_EFFORTS, sampling: [], samplingExclusive: false, maxOutputTokens: 128_000 } as const;
const SAMPLING = ['temperature', 'top_p', 'top_k'];

/**
 * The models of the catalogue, by the name the gateway sends upstream.
 * - Context, max output and thinking per model: https://platform.claude.com/docs/en/about-claude/models/overview
 *   and the model pages (https://platform.claude.com/docs/en/models/opus-5/overview, .../fable-5/overview,
 *   .../opus-4-8/overview).
 * - Opus 5 thinks by default and can turn thinking off only at effort high or below:
 *   https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5
 * - Fable 5: adaptive thinking always on (`disabled` refused): https://platform.claude.com/docs/en/models/fable-5/overview
 * - Opus 4.7 and later, Sonnet 5: adaptive only, `temperature`/`top_p`/`top_k` refused, effort xhigh added:
 *   https://platform.claude.com/docs/en/about-claude/models/migration-guide#migrating-to-claude-opus-4-7
 * - The 4.5/4.6 models: `temperature` and `top_p` not together; budget thinking deprecated on 4.6:
 *   https://platform.claude.com/docs/en/about-claude/models/migration-guide
 * - Haiku 4.5: extended (budget) thinking only, no effort: https://platform.claude.com/docs/en/build-with-claude/effort
 * - Minimum cacheable prompt per model: https://platform.claude.com/docs/en/build-with-claude/prompt-caching#cache-limitations
 *   (Opus 4.8 lowered to 1,024: https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-8)
 */
export const API_MODELS: Record<string, ApiModel> = {
  'model-opus-5': { ...ADAPTIVE_ONLY, efforts: ALL_EFFORTS, sampling: [], thinkingDefault: 'on', minCacheableTokens: 512 },
  'model-fable-5': { ...ADAPTIVE_ONLY, efforts: ALL_EFFORTS, sampling: [], thinkingDefault: 'always', minCacheableTokens: 512 },
  'model-opus-4.8': { ...ADAPTIVE_ONLY, efforts: ALL_EFFORTS, sampling: [], thinkingDefault: 'off', minCacheableTokens: 1024 },
  'model-opus-4.7': { ...ADAPTIVE_ONLY, efforts: ALL_EFFORTS, sampling: [], thinkingDefault: 'off', minCacheableTokens: 4096 },
  'model-sonnet-5': { ...ADAPTIVE_ONLY, efforts: ALL_EFFORTS, sampling: [], thinkingDefault: 'off', minCacheableTokens: 1024 },
  'model-opus-4.6': { thinking: 'both', thinkingDefault: 'off', efforts: ['low', 'medium', 'high', 'max'], sampling: SAMPLING, samplingExclusive: true, maxOutputTokens: 128_000, minCacheableTokens: 4096 },
  'model-sonnet-4.6': { thinking: 'both', thinkingDefault: 'off', efforts: ['low', 'medium', 'high', 'max'], sampling: SAMPLING, samplingExclusive: true, maxOutputTokens: 64_000, minCacheableTokens: 2048 },
  'model-haiku-4.5': { thinking: 'budget', thinkingDefault: 'off', efforts: [], sampling: SAMPLING, samplingExclusive: true, maxOutputTokens: 64_000, minCacheableTokens: 4096 },
};

/** The fake's token count of a value: a quarter of its JSON length, rounded up (deterministic, not a tokenizer). */
export function countTokens(value: unknown): number {
  return Math.ceil(JSON.stringify(value ?? '').length / 4);
}

/** Whether a request body makes the model think. */
export function thinkingOn(body: any): boolean {
  const type = body?.thinking?.type;
  if (type === 'enabled' || type === 'adaptive') return true;
  if (type === 'disabled') return false;
  const model = API_MODELS[body?.model];
  return model !== undefined && model.thinkingDefault !== 'off';
}

/**
 * Why the real API would answer this body 400, or null when it would accept it.
 * @param issuedSignatures the thinking signatures this upstream issued (a block with any other is refused)
 */
export function refusal(body: any, issuedSignatures: ReadonlySet<string>): string | null {
  const model = API_MODELS[body?.model];
  return (model ? modelRefusal(body, model) : null) ?? contentBlockRefusal(body) ?? thinkingBlockRefusal(body, issuedSignatures) ?? cacheControlRefusal(body) ?? billingFieldRefusal(body);
}

/**
 * Models of the shipped catalogue that offer fast mode (config.json `fastModeMultiplier`), as the
 * provider lists them (platform.claude.com/docs/en/build-with-claude/fast-mode, read 2026-11-25).
 */
export const FAST_MODE_MODELS = ['model-opus-5', 'model-opus-4.8', 'model-opus-4.7', 'model-opus-4.6'];

/**
 * What the real API refuses of a request's billing fields, or null: fast mode on a model that does
 * not offer it ("supported on" list of the fast mode page), and an `inference_geo` other than `global`
 * or `us` (data residency page, "Inference geo" table).
 */
export function billingFieldRefusal(body: any): string | null {
  if (body?.speed === 'fast' && !FAST_MODE_MODELS.includes(body.model)) return `fast mode is not supported for model ${body.model}`;
  if (body?.inference_geo !== undefined && !['global', 'us'].includes(body.inference_geo)) return 'inference_geo: must be one of "global", "us"';
  return null;
}

function modelRefusal(body: any, model: ApiModel): string | null {
  if (typeof body.max_tokens === 'number' && body.max_tokens > model.maxOutputTokens) {
    return `max_tokens: ${body.max_tokens} > ${model.maxOutputTokens}, which is the maximum allowed number of output tokens for ${body.model}`;
  }
  const type = body.thinking?.type;
  const effort = body.output_config?.effort;
  // https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
  if (type === 'enabled' && model.thinking === 'adaptive') {
    return '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.';
  }
  if (type === 'adaptive' && model.thinking === 'budget') return '"thinking.type.adaptive" is not supported for this model';
  if (effort !== undefined && !model.efforts.includes(effort)) return `output_config.effort: "${effort}" is not supported for this model`;
  if (type === 'disabled' && model.thinkingDefault === 'always') return '"thinking.type.disabled" is not supported for this model';
  if (type === 'disabled' && model.thinkingDefault === 'on' && (effort === 'xhigh' || effort === 'max')) {
    return `thinking cannot be disabled at effort "${effort}"`;
  }
  // https://platform.claude.com/docs/en/build-with-claude/extended-thinking
  if (type === 'enabled') {
    const budget = body.thinking.budget_tokens;
    if (typeof budget !== 'number' || budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (budget >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  }
  const thinking = thinkingOn(body);
  if (thinking && (body.tool_choice?.type === 'any' || body.tool_choice?.type === 'tool')) {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  for (const field of SAMPLING) {
    if (body[field] === undefined) continue;
    if (!model.sampling.includes(field)) return `\`${field}\` is deprecated for this model.`;
  }
  if (model.samplingExclusive && body.temperature !== undefined && body.top_p !== undefined) {
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  }
  if (thinking && (body.temperature !== undefined && body.temperature !== 1)) return '`temperature` may only be set to 1 when thinking is enabled.';
  if (thinking && body.top_k !== undefined) return '`top_k` is not supported when thinking is enabled.';
  // "When thinking is enabled, you can set top_p to values between 1 and 0.95":
  // https://platform.claude.com/docs/en/build-with-claude/extended-thinking#feature-compatibility
  if (thinking && typeof body.top_p === 'number' && body.top_p < 0.95) return '`top_p` must be greater than or equal to 0.95 when thinking is enabled.';
  return null;
}

/**
 * What the API refuses of a request's content blocks, whatever the model:
 * - a message with no content (`""` or `[]`) but for a final assistant message (a prefill), the
 *   API's answer "all messages must have non-empty content except for the optional final assistant
 *   message" (https://platform.claude.com/docs/en/api/messages: `messages`);
 * - an empty text block, in a message or the system prompt ("text content blocks must be non-empty"),
 *   and `cache_control` on one, which is answered first: the answers of the API seen in
 *   https://github.com/anthropics/claude-code/issues/59812 and /62379 (Messages API reference:
 *   https://platform.claude.com/docs/en/api/messages);
 * - `cache_control` on a thinking block: "Thinking blocks cannot be explicitly marked with
 *   cache_control" (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#caching-with-thinking-blocks).
 */
export function contentBlockRefusal(body: any): string | null {
  const system = Array.isArray(body?.system) ? body.system : [];
  for (const [j, block] of system.entries()) {
    if (block?.type !== 'text' || block.text !== '') continue;
    return block.cache_control !== undefined ? `system.${j}.text: cache_control cannot be set for empty text blocks` : 'system: text content blocks must be non-empty';
  }
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  for (const [i, message] of messages.entries()) {
    const empty = message?.content === '' || (Array.isArray(message?.content) && message.content.length === 0);
    if (empty && !(i === messages.length - 1 && message.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
    if (!Array.isArray(message?.content)) continue;
    for (const [j, block] of message.content.entries()) {
      if (block?.type === 'text' && block.text === '') {
        return block.cache_control !== undefined ? `messages.${i}.content.${j}.text: cache_control cannot be set for empty text blocks` : 'messages: text content blocks must be non-empty';
      }
      if ((block?.type === 'thinking' || block?.type === 'redacted_thinking') && block.cache_control !== undefined) {
        return `messages.${i}.content.${j}.${block.type}.cache_control: Extra inputs are not permitted`;
      }
    }
  }
  return null;
}

/**
 * Thinking blocks in a tool loop (https://platform.claude.com/docs/en/build-with-claude/extended-thinking#preserving-thinking-blocks):
 * with thinking on, the last assistant turn before tool results must start with the thinking block
 * the model produced, and every thinking block must carry the signature the API issued.
 */
function thinkingBlockRefusal(body: any, issued: ReadonlySet<string>): string | null {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  for (const [i, message] of messages.entries()) {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) continue;
    for (const [j, block] of message.content.entries()) {
      if (block?.type === 'thinking' && !issued.has(block.signature)) return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  if (!thinkingOn(body)) return null;
  const last = messages[messages.length - 1];
  const toolResults = Array.isArray(last?.content) && last.content.some((b: any) => b?.type === 'tool_result');
  const index = messages.length - 2;
  const assistant = messages[index];
  if (!toolResults || assistant?.role !== 'assistant' || !Array.isArray(assistant.content)) return null;
  const first = assistant.content[0];
  if (assistant.content.some((b: any) => b?.type === 'tool_use') && first?.type !== 'thinking' && first?.type !== 'redacted_thinking') {
    return `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
  }
  return null;
}

/** The prompt's cacheable blocks in cache order: tools, system, then messages (https://platform.claude.com/docs/en/build-with-claude/prompt-caching). */
function promptBlocks(body: any): Array<{ block: any; marked: boolean }> {
  const blocks: any[] = [];
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) blocks.push(tool);
  if (Array.isArray(body?.system)) blocks.push(...body.system);
  else if (typeof body?.system === 'string') blocks.push({ type: 'text', text: body.system });
  for (const message of Array.isArray(body?.messages) ? body.messages : []) {
    if (Array.isArray(message?.content)) blocks.push(...message.content.map((b: any) => ({ ...b, role: message.role })));
    else blocks.push({ type: 'text', text: message?.content, role: message?.role });
  }
  return blocks.map((block) => ({ block, marked: block?.cache_control !== undefined }));
}

/** At most four cache breakpoints (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#cache-limitations). */
function cacheControlRefusal(body: any): string | null {
  const marked = promptBlocks(body).filter((b) => b.marked).length;
  return marked > 4 ? `A maximum of 4 blocks with cache_control may be provided. Found ${marked}.` : null;
}

/** What one request's prompt cost: uncached input, cache writes and cache reads, in the fake's tokens. */
export interface PromptUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/**
 * A prompt cache per upstream (https://platform.claude.com/docs/en/build-with-claude/prompt-caching#how-automatic-prefix-checking-works):
 * a breakpoint's prefix (everything up to and including the marked block) is written when it is at
 * least the model's minimum; a later request reads the longest cached prefix that ends at one of its
 * breakpoints or at one of the 20 blocks before each. Unmarked prompts neither read nor write.
 */
export function createPromptCache(): { account(body: any): PromptUsage } {
  const cached = new Set<string>();
  return {
    account(body) {
      const blocks = promptBlocks(body);
      const prefixes: Array<{ hash: string; tokens: number }> = [];
      const hash = createHash('sha256').update(String(body?.model));
      let tokens = 0;
      for (const { block } of blocks) {
        const { cache_control: _cc, ...content } = block ?? {};
        hash.update(JSON.stringify(content));
        tokens += countTokens(content);
        prefixes.push({ hash: hash.copy().digest('hex'), tokens });
      }
      const total = tokens + countTokens(body?.messages?.length ?? 0);
      const marks = blocks.flatMap((b, i) => (b.marked ? [i] : []));
      let read = 0;
      for (const mark of marks) {
        for (let i = mark; i >= Math.max(0, mark - 20); i -= 1) if (cached.has(prefixes[i].hash)) read = Math.max(read, prefixes[i].tokens);
      }
      const min = API_MODELS[body?.model]?.minCacheableTokens ?? 1024;
      let written = read;
      for (const mark of marks) {
        if (prefixes[mark].tokens < min) continue;
        cached.add(prefixes[mark].hash);
        written = Math.max(written, prefixes[mark].tokens);
      }
      return { input_tokens: total - written, cache_creation_input_tokens: written - read, cache_read_input_tokens: read };
    },
  };
}

/** Judges requests for one fake upstream: refuses as the API would, and learns the signatures its replies issue. */
export interface ApiJudge {
  /** The 400 reply the API would give this request, or null. */
  judge(request: RecordedRequest): FakeReply | null;
  /** Note the thinking signatures of a reply about to be sent (they become valid in later requests). */
  note(reply: FakeReply): void;
}

/**
 * Thinking signatures any fake upstream of this process issued. A signature is the API's, not one
 * account's: "signature values are compatible across platforms" (Claude API, Bedrock, Vertex AI;
 * https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#thinking-encryption), so a
 * session that fails over to another account (another fake) still sends valid ones; only a signature no
 * upstream issued is refused.
 */
const ISSUED_SIGNATURES = new Set<string>();

/** A judge for `POST /v1/messages` (other paths pass). */
export function createApiJudge(): ApiJudge {
  const issued = ISSUED_SIGNATURES;
  const noteBlock = (block: any) => {
    if (block?.type === 'thinking' && typeof block.signature === 'string') issued.add(block.signature);
  };
  return {
    judge(request) {
      if (request.method !== 'POST' || request.url.split('?')[0] !== '/v1/messages') return null;
      const message = refusal(request.body, issued);
      if (!message) return null;
      return { kind: 'json', status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message }, request_id: 'req_fake_refused' } };
    },
    note(reply) {
      if (reply.kind === 'json') for (const block of (reply.body as any)?.content ?? []) noteBlock(block);
      if (reply.kind !== 'stream') return;
      for (const item of reply.events) {
        const data = 'data' in item ? (item.data as any) : undefined;
        if (data?.delta?.type === 'signature_delta') issued.add(data.delta.signature);
        noteBlock(data?.content_block);
      }
    },
  };
}
