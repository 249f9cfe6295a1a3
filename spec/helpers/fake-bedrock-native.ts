/**
 * A native FakeHandler (fake-upstream.ts's scripted replies, e.g. agent-upstream.ts's tool loop) behind
 * the fake Bedrock runtime (fake-bedrock.ts): the InvokeModel body the fake admitted is turned back
 * into the native request the handler judges (the model named by the path, `anthropic_beta` as the
 * `anthropic-beta` header, `stream` by the operation), and the handler's reply into Bedrock's: a whole
 * message with its token-count headers, an event stream whose last chunk carries Bedrock's invocation
 * metrics (the counts the native events report), or an error with its exception name
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html, "Errors").
 * The fake's own checks (signature, body rules) run first and stay as they are.
 */
import type { BedrockRecord, BedrockScript } from './fake-bedrock';
import type { FakeHandler, RecordedRequest } from './fake-upstream';

/** Bedrock's exception for a native error status (InvokeModel "Errors"). */
function exceptionOf(status: number): string {
  if (status === 429) return 'ThrottlingException';
  if (status === 503 || status === 529) return 'ServiceUnavailableException';
  if (status === 403) return 'AccessDeniedException';
  if (status === 404) return 'ResourceNotFoundException';
  if (status < 500) return 'ValidationException';
  return 'InternalServerException';
}

/**
 * The script that answers each admitted InvokeModel / InvokeModelWithResponseStream with `handler`.
 * @param nativeModels Bedrock model ID (as in the path) -> the native model name the handler sees
 */
export function nativeBedrockScript(handler: FakeHandler, nativeModels: Record<string, string>): (record: BedrockRecord) => BedrockScript {
  return (record) => {
    const stream = record.url.includes('/invoke-with-response-stream');
    const { anthropic_version: _version, anthropic_beta: betas, ...rest } = record.body as Record<string, unknown>;
    const body = { ...rest, model: nativeModels[record.modelId!] ?? record.modelId, ...(stream ? { stream: true } : {}) };
    const headers = { ...record.headers, ...(Array.isArray(betas) ? { 'anthropic-beta': betas.join(',') } : {}) };
    const native: RecordedRequest = { method: 'POST', url: '/v1/messages', headers, body, raw: Buffer.from(JSON.stringify(body)) };
    const reply = handler(native);
    if (reply.kind === 'json') {
      const status = reply.status ?? 200;
      if (status < 400) return { kind: 'message', body: reply.body as Record<string, any> };
      const message = (reply.body as any)?.error?.message ?? `status ${status}`;
      return { kind: 'error', status, errorType: exceptionOf(status), message };
    }
    if (reply.kind !== 'stream') throw new Error(`the Bedrock adapter of a native handler takes json or stream replies, not ${reply.kind}`);
    const events = reply.events.filter((item): item is { event: string; data: any } => 'event' in item);
    const start = events.find((e) => e.event === 'message_start')?.data?.message?.usage ?? {};
    const delta = [...events].reverse().find((e) => e.event === 'message_delta')?.data?.usage ?? {};
    const metrics = {
      inputTokenCount: start.input_tokens ?? 0, outputTokenCount: delta.output_tokens ?? 0,
      cacheReadInputTokenCount: start.cache_read_input_tokens ?? 0, cacheWriteInputTokenCount: start.cache_creation_input_tokens ?? 0,
      invocationLatency: 120, firstByteLatency: 40,
    };
    return { kind: 'events', events, metrics };
  };
}
