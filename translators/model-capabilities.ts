/**
 * What a model accepts, as the translated routes need to know it (config.json `models[].capabilities`),
 * and the rules that fit a translated native request to it: the output ceiling, thinking asked for the
 * way the model takes it, and the sampling fields it refuses dropped.
 *
 * Sources (docs/translation.md "Model capabilities" cites them per model): the provider's model pages
 * (https://platform.claude.com/docs/en/about-claude/models/overview and the per-model overview pages),
 * the adaptive thinking and effort pages, and the migration guide (sampling fields removed on Opus 4.7
 * and later; `temperature` and `top_p` not together on the 4.5/4.6 models).
 */

/**
 * How a model is asked to think: `adaptive` (`thinking: {type: "adaptive"}` plus `output_config.effort`;
 * a budget is refused with 400), `budget` (`thinking: {type: "enabled", budget_tokens}`; adaptive and
 * effort refused), `both` (adaptive preferred: the budget form is deprecated there), `none`.
 */
export type ThinkingMode = 'adaptive' | 'budget' | 'both' | 'none';

/** A native sampling field. */
export type SamplingField = 'temperature' | 'top_p' | 'top_k';

/** The effort levels of `output_config.effort`, lowest first. */
export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;

export interface ModelCapabilities {
  thinking: ThinkingMode;
  /**
   * When the model thinks unasked: `off` (only when asked; default), `on` (thinks unless sent
   * `thinking: {type: "disabled"}`, which it takes only at effort `high` or below), `always` (refuses
   * `disabled`: the least thinking is the lowest effort).
   */
  thinkingDefault?: 'off' | 'on' | 'always';
  /** `output_config.effort` values the model accepts (EFFORT_LEVELS order). Default none. */
  efforts?: string[];
  /** Sampling fields the model accepts; any other is dropped before the upstream sees it. */
  sampling: SamplingField[];
  /** The model refuses `temperature` and `top_p` in one request (`top_p` is then dropped). Default false. */
  samplingExclusive?: boolean;
  /** Largest `max_tokens` the model takes (its output ceiling), in tokens. */
  maxOutputTokens: number;
  /** Input plus output tokens the model can hold, in tokens. */
  contextWindow: number;
  /** Shortest prompt prefix the model caches, in tokens (a shorter marked prefix is not cached). */
  minCacheableTokens: number;
}

/** Thinking budget (tokens) per client effort, for budget-only models; an effort missing here turns thinking off. */
export type ThinkingBudgets = Readonly<Record<string, number>>;

/** The smallest native `thinking.budget_tokens` (wire-formats.md §1.1). */
export const MIN_THINKING_BUDGET = 1024;

/** The native fields the rules read and set (both translated routes' request types have them). */
export interface TunableRequest {
  max_tokens: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  tool_choice?: { type: string };
  thinking?: NativeThinking;
  output_config?: { effort?: string; [field: string]: unknown };
}

/** The native `thinking` field (wire-formats.md §1.1). */
export type NativeThinking =
  | { type: 'enabled'; budget_tokens: number }
  | { type: 'adaptive' }
  | { type: 'disabled' };

export interface ModelRuleInput {
  /** The client's effort (chat `reasoning_effort`, Responses `reasoning.effort`); absent: the model's default. */
  effort?: string | null;
  /** Whether the client gave the token limit (else `max_tokens` is the model's ceiling, shared by thinking and answer). */
  clientLimit: boolean;
  /** The model's capabilities; absent: nothing is changed but the effort, which is then ignored. */
  capabilities?: ModelCapabilities;
  thinkingBudgets: ThinkingBudgets;
  /** The client's name of the effort field, for warnings. */
  effortField: string;
}

export interface ModelRuleResult {
  /** Lossy changes the client should hear about (`x-gateway-warning`). */
  warnings: string[];
  /** Sampling fields dropped because the model refuses them (`x-gateway-dropped-params`). */
  dropped: SamplingField[];
}

/**
 * Fit `request` to the model, in place: `max_tokens` above the ceiling is lowered to it; the effort
 * becomes adaptive thinking with `output_config.effort` or a budget (`none`/`minimal` mean no thinking
 * where the model allows it); thinking is left out when `tool_choice` forces a tool (the native format
 * refuses both together), or, on a model that always thinks, the forced choice becomes `auto`; the
 * sampling fields the model refuses, or refuses with thinking on, are dropped. Never throws: what
 * cannot apply is dropped with a warning (compatibility rule 2).
 */
export function applyModelRules(request: TunableRequest, input: ModelRuleInput): ModelRuleResult {
  const warnings: string[] = [];
  const caps = input.capabilities;
  if (caps && request.max_tokens > caps.maxOutputTokens) {
    warnings.push(`max_tokens ${request.max_tokens} lowered to the model's output ceiling ${caps.maxOutputTokens}`);
    request.max_tokens = caps.maxOutputTokens;
  }
  if (caps) applyThinking(request, input, caps, warnings);
  else if (typeof input.effort === 'string') warnings.push(`${input.effort === '' ? input.effortField : `${input.effortField} ${input.effort}`} ignored: the model's thinking capabilities are not configured`);
  const dropped = caps ? dropSampling(request, caps) : [];
  return { warnings, dropped };
}

/** Whether the request, as now set, makes the model think. */
export function thinks(request: TunableRequest, caps: ModelCapabilities): boolean {
  if (request.thinking) return request.thinking.type !== 'disabled';
  return caps.thinkingDefault === 'on' || caps.thinkingDefault === 'always';
}

function applyThinking(request: TunableRequest, input: ModelRuleInput, caps: ModelCapabilities, warnings: string[]): void {
  const effort = input.effort;
  if (caps.thinkingDefault === 'always' && (request.tool_choice?.type === 'any' || request.tool_choice?.type === 'tool')) {
    // A model that always thinks takes only auto or none (thinking refuses a forced tool).
    request.tool_choice = { ...request.tool_choice, type: 'auto' };
    delete (request.tool_choice as { name?: string }).name;
    warnings.push('tool_choice relaxed to auto: the model always thinks, and thinking cannot be combined with a forced tool');
  }
  // Checked with or without an effort: a model that thinks by default must be told not to.
  if (request.tool_choice?.type === 'any' || request.tool_choice?.type === 'tool') {
    if (typeof effort === 'string' && effort !== 'none' && effort !== 'minimal' && caps.thinking !== 'none') {
      warnings.push(`${input.effortField} ${effort} left out: thinking cannot be combined with a forced tool_choice`);
    }
    if (caps.thinkingDefault === 'on') request.thinking = { type: 'disabled' };
    return;
  }
  if (typeof effort !== 'string' || caps.thinking === 'none') {
    if (typeof effort === 'string' && effort !== 'none') warnings.push(`${input.effortField} ${effort} ignored: the model does not think`);
    return;
  }
  const off = effort === 'none' || effort === 'minimal';
  if (off && caps.thinkingDefault !== 'always') {
    if (caps.thinkingDefault === 'on') request.thinking = { type: 'disabled' };
    return;
  }
  if (caps.thinking === 'budget') {
    applyBudget(request, effort, input, warnings);
    return;
  }
  const level = nearestEffort(off ? 'low' : effort, caps.efforts ?? []);
  request.thinking = { type: 'adaptive' };
  if (level) request.output_config = { ...request.output_config, effort: level };
  if (off) warnings.push(`${input.effortField} ${effort}: the model always thinks; asked for the lowest effort`);
  else if (level !== effort) warnings.push(`${input.effortField} ${effort} sent as effort ${level ?? '(model default)'} (the levels the model takes)`);
}

/**
 * The budget form: the client's limit covers thinking and answer (as in the Responses API), so the
 * budget may take all of it but one token; without a client limit at most half the ceiling thinks.
 */
function applyBudget(request: TunableRequest, effort: string, input: ModelRuleInput, warnings: string[]): void {
  const wanted = input.thinkingBudgets[effort];
  if (wanted === undefined) {
    warnings.push(`${input.effortField} ${effort} has no thinking budget configured: no thinking`);
    return;
  }
  const budget = Math.min(wanted, input.clientLimit ? request.max_tokens - 1 : Math.floor(request.max_tokens / 2));
  if (budget < MIN_THINKING_BUDGET) {
    warnings.push(`${input.effortField} ${effort} left out: max_tokens ${request.max_tokens} leaves no room for the minimum thinking budget (${MIN_THINKING_BUDGET})`);
    return;
  }
  request.thinking = { type: 'enabled', budget_tokens: budget };
}

/** The accepted effort nearest `effort`: itself, else the highest below it, else the lowest accepted; undefined when none is. */
export function nearestEffort(effort: string, accepted: readonly string[]): string | undefined {
  if (accepted.includes(effort)) return effort;
  const rank = EFFORT_LEVELS.indexOf(effort as (typeof EFFORT_LEVELS)[number]);
  const ranked = EFFORT_LEVELS.filter((level) => accepted.includes(level));
  if (ranked.length === 0) return undefined;
  const below = ranked.filter((level) => EFFORT_LEVELS.indexOf(level) <= rank);
  return below.length > 0 ? below[below.length - 1] : ranked[0];
}

/**
 * Drop the sampling fields the model refuses: those it does not take at all, `top_p` when it takes
 * `temperature` and `top_p` only one at a time, and, with thinking on, `temperature`, `top_p` and
 * `top_k` (the native format refuses them with thinking).
 */
function dropSampling(request: TunableRequest, caps: ModelCapabilities): SamplingField[] {
  const dropped: SamplingField[] = [];
  const thinking = thinks(request, caps);
  for (const field of ['temperature', 'top_p', 'top_k'] as const) {
    if (request[field] === undefined) continue;
    const exclusive = field === 'top_p' && caps.samplingExclusive === true && request.temperature !== undefined;
    if (thinking || exclusive || !caps.sampling.includes(field)) {
      delete request[field];
      dropped.push(field);
    }
  }
  return dropped;
}
