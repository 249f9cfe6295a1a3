/**
 * The attributes of a request's spans (lib/observability/tracing.ts), from its context: the OpenTelemetry GenAI
 * semantic conventions (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/) and the
 * HTTP server ones, plus the gateway's own (`gateway.*`). Counts and labels only: never a prompt, a
 * completion, a header value or a secret.
 */
import type { RequestContext } from '../pipeline/context';
import type { SpanAttributes } from './trace-span';
import { formatAttemptChain } from '../upstream/attempt-chain';


/**
 * `gen_ai.operation.name` of a route (the path as the router matched it), or undefined for a route that
 * asks no model for a completion (count_tokens, models, admin).
 */
export function operationNameOf(route: string): string | undefined {
  const path = route.slice(route.indexOf(' ') + 1).toLowerCase().replace(/\/$/, '');
  return path === '/v1/messages' || path === '/v1/chat/completions' || path === '/v1/responses' ? 'chat' : undefined;
}

/**
 * The attributes the server span gets when the request has closed (`status`: the HTTP status the
 * client got). `gen_ai.usage.input_tokens` includes the cache tokens, which also get their own
 * attributes, as the convention asks.
 */
export function formatServerSpanAttributes(ctx: RequestContext, status: number): SpanAttributes {
  const usage = ctx.usage;
  const operation = operationNameOf(ctx.route);
  const attributes: SpanAttributes = {
    'http.response.status_code': status,
    'gateway.request.id': ctx.requestId,
    'gateway.key.id': ctx.key?.id,
    'gateway.key_group': ctx.keyGroup,
    'gateway.credits': ctx.credits,
    'error.type': ctx.errorCode ?? ctx.error?.type,
  };
  // Why it failed, as the log line says it (bounded, redacted: lib/upstream/attempt-chain.ts).
  if (ctx.error) attributes['gateway.error.message'] = ctx.error.message;
  if (ctx.attempts) attributes['gateway.upstream.attempts'] = formatAttemptChain(ctx.attempts);
  if (ctx.sessionId !== undefined) {
    attributes['session.id'] = ctx.sessionId;
    attributes['gen_ai.conversation.id'] = ctx.sessionId;
  }
  if (ctx.agentId !== undefined) attributes['gen_ai.agent.id'] = ctx.agentId;
  if (operation === undefined || !ctx.model) return attributes;
  Object.assign(attributes, {
    'gen_ai.operation.name': operation,
    'gen_ai.request.model': ctx.requestedModel ?? ctx.model.id,
    'gen_ai.response.model': ctx.model.id,
    'gen_ai.request.stream': ctx.stream,
  });
  if (ctx.stopReason) attributes['gen_ai.response.finish_reasons'] = [ctx.stopReason];
  if (usage) {
    attributes['gen_ai.usage.input_tokens'] = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    attributes['gen_ai.usage.output_tokens'] = usage.output_tokens;
    attributes['gen_ai.usage.cache_creation.input_tokens'] = usage.cache_creation_input_tokens;
    attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cache_read_input_tokens;
  }
  return attributes;
}

/** Only the defined attributes (the API drops undefined ones with a warning). */
export function definedAttributes(attributes: SpanAttributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) out[name] = value;
  return out;
}
