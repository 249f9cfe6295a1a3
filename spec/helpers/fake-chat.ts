/** Replies of a fake chat-completions upstream (wire-formats.md §5-§7), for the fake upstream server. */
import type { FakeHandler, FakeReply } from './fake-upstream';

/** The chunks of a streamed text reply; with `usage`, the usage-only chunk too (as include_usage asks). */
export function chatTextChunks(pieces: string[], model: string, usage?: { prompt_tokens: number; completion_tokens: number }): Array<Record<string, unknown>> {
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1723031665, model };
  const extra = usage ? { usage: null } : {};
  return [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], ...extra },
    ...pieces.map((content) => ({ ...base, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], ...extra })),
    { ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }], ...extra },
    ...(usage ? [{ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }] : []),
  ];
}

/** An SSE reply of chat chunks ended by `data: [DONE]` (unless `done` is false). */
export function chatStreamReply(chunks: Array<Record<string, unknown>>, done = true): FakeReply {
  return { kind: 'stream', events: [...chunks.map((chunk) => ({ raw: `data: ${JSON.stringify(chunk)}\n\n` })), ...(done ? [{ raw: 'data: [DONE]\n\n' }] : [])] };
}

/** A `chat.completion` body. */
export function chatCompletion(text: string, model: string, usage = { prompt_tokens: 11, completion_tokens: 7 }): Record<string, unknown> {
  return {
    id: 'chatcmpl-fake', object: 'chat.completion', created: 1723031665, model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

/** Default chat upstream: text replies, streamed when asked, usage chunk when include_usage is set. */
export const chatHandler: FakeHandler = (request) => {
  const model = request.body?.model;
  if (!request.body?.stream) return { kind: 'json', body: chatCompletion('Bonjour', model) };
  const usage = request.body.stream_options?.include_usage ? { prompt_tokens: 11, completion_tokens: 7 } : undefined;
  return chatStreamReply(chatTextChunks(['Bon', 'jour'], model, usage));
};
