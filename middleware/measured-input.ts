/**
 * The input of a native request measured by the upstream's free count_tokens
 * (`POST /v1/messages/count_tokens`, to the same upstream and target), used only where the byte bound
 * (lib/billing/input-bound.ts) would refuse a request near its key's cap: an agent's 120 KB request is
 * held at about 120,000 tokens by its bytes, at what it really counts when measured.
 *
 * The provider documents the count as an estimate: "The token count should be considered an estimate.
 * In some cases, the actual number of input tokens used when creating a message may differ by a small
 * amount." (https://platform.claude.com/docs/en/build-with-claude/token-counting). It gives no figure,
 * so the measured input is held with a margin of MEASURE_MARGIN of it plus
 * `reservation.overheadInputTokens`; what the upstream adds beyond the request (documents it fetches,
 * server-tool results) is added as the byte bound adds it.
 */
import type { Request } from 'express';
import type { GatewayConfig } from '../lib/config';
import type { RequestContext } from '../lib/pipeline/context';
import type { LedgerStore, Reservation, TeamCaps } from '../lib/store/types';
import type { UpstreamClient } from '../lib/upstream';
import type { InputBound } from '../lib/billing/input-bound';
import { callUpstream, parseJson } from '../lib/upstream/pinned-call';
import { estimateWorstCase, scaleWorstCase, worstCaseCredits, type WorstCase } from '../lib/billing/worst-case';

/** Share of the measured input held on top of it (the count is an estimate, see the module comment). */
export const MEASURE_MARGIN = 0.05;

/** How long a measurement may take, ms: past it the byte bound's refusal stands (a refusal never waits on the upstream). */
export const MEASURE_TIMEOUT_MS = 3000;

/** Members of a Messages body that count_tokens takes (Messages API reference, "Count Message tokens"). */
const COUNTED_MEMBERS = ['messages', 'system', 'tools', 'tool_choice', 'thinking', 'mcp_servers', 'context_management', 'output_config'];

/**
 * Ask the upstream how many input tokens the request's body counts.
 * @returns the count, or null when the upstream did not give one (any failure: the byte bound stands)
 */
export async function measureInputTokens(upstream: UpstreamClient, req: Request, ctx: RequestContext): Promise<number | null> {
  const body = req.body as Record<string, unknown>;
  const counted: Record<string, unknown> = { model: ctx.model!.upstreamModel };
  for (const member of COUNTED_MEMBERS) if (body[member] !== undefined) counted[member] = body[member];
  try {
    const signal = AbortSignal.timeout(MEASURE_TIMEOUT_MS);
    const answer = await callUpstream(upstream, req, 'POST', '/v1/messages/count_tokens', { body: Buffer.from(JSON.stringify(counted)), target: ctx.target, signal });
    const tokens = answer.status === 200 ? parseJson(answer)?.input_tokens : undefined;
    return typeof tokens === 'number' && Number.isSafeInteger(tokens) && tokens >= 0 ? tokens : null;
  } catch {
    return null;
  }
}

/**
 * The input bound from a measured count: the count and its margin, the overhead, and what the upstream
 * adds that count_tokens does not see (fetched documents, server-tool steps: the byte bound's figures).
 */
export function measuredInputTokens(measured: number, bound: InputBound, overheadInputTokens: number): number {
  let steps = bound.fetched;
  for (const uses of bound.toolSteps.values()) steps += uses;
  return Math.ceil(measured * (1 + MEASURE_MARGIN)) + overheadInputTokens + steps * bound.window;
}

/**
 * Hold a refused native request at its measured input (when count_tokens answers and the measured
 * bound is below the byte bound): the whole worst case when it fits, else all the credit left down to
 * a minimal reply, as the admission would have.
 * @returns the hold and the worst case it was sized from, or null (the refusal stands)
 */
export async function holdAtMeasuredInput(req: Request, ctx: RequestContext, options: {
  store: LedgerStore; upstream: UpstreamClient; bound: InputBound; reservation: GatewayConfig['reservation'];
  maxTokens: number; choices: number; month: string; ttlMs: number;
  /** The largest `priceMultiplier` of the targets that may serve it. Default 1. */
  priceMultiplier?: number;
  /** A team key's caps (lib/store/people-caps.ts): the hold fits them too. */
  teamCaps?: TeamCaps;
}): Promise<{ reservation: Reservation; worst: WorstCase; credits: number } | null> {
  const { reservation } = options;
  const measured = await measureInputTokens(options.upstream, req, ctx);
  if (measured === null) return null;
  const tokens = measuredInputTokens(measured, options.bound, reservation.overheadInputTokens);
  if (tokens >= options.bound.tokens) return null;
  const worst = scaleWorstCase(estimateWorstCase(ctx.model!, req.body, tokens, options.maxTokens, reservation, options.choices), options.priceMultiplier ?? 1);
  const credits = worstCaseCredits(worst);
  const minCredits = worstCaseCredits(worst, Math.min(worst.maxTokens, reservation.minOutputTokens));
  const key = ctx.key!;
  const held = await options.store.reserveCredits(key.id, options.month, credits, key.monthlyCreditCap, options.ttlMs, minCredits, undefined, options.teamCaps);
  return held.ok ? { reservation: held.reservation, worst, credits } : null;
}
