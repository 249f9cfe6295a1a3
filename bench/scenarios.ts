/**
 * What the benchmark sends. Each scenario is one request, sent to the gateway on its own route, and
 * (as `floor`) the native request that makes the fake upstream produce the same reply, sent through the
 * bare forwarder: a gateway figure is always compared with the forwarder moving the same upstream bytes.
 */
/** The key every bench request carries (the bench gateway's one configured key). */
export const BENCH_KEY = 'sk-cs4-bench-0000000000000001';

export type ScenarioId =
  | 'native-json' | 'native-stream-5' | 'native-stream-200' | 'chat-json' | 'chat-stream-200' | 'chat-stream-tools'
  | 'responses-json' | 'responses-stream-200' | 'native-json-300ms' | 'chat-json-300ms' | 'chat-stream-300ms';
export type FloorId = 'native-json' | 'native-stream-5' | 'native-stream-200' | 'native-stream-tools' | 'native-json-300ms' | 'native-stream-300ms';

export interface BenchRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface Scenario {
  id: ScenarioId;
  title: string;
  stream: boolean;
  /** The request sent to the gateway. */
  request: BenchRequest;
  /** The forwarder scenario this one is compared with. */
  floor: FloorId;
  /** Text a complete reply contains (checked once before each run). */
  completeMarker: string;
  /** Connections of the load generator for this scenario; default `--connections`. */
  connections?: number;
}

const MESSAGES = [{ role: 'user', content: 'Say hello in one short sentence.' }];
const NATIVE_HEADERS = { 'content-type': 'application/json', 'x-api-key': BENCH_KEY, 'anthropic-version': '2023-06-01' };
const CHAT_HEADERS = { 'content-type': 'application/json', authorization: `Bearer ${BENCH_KEY}` };
/** Tool-call deltas in the tool stream scenario (the upstream sends one input_json_delta per max_token). */
const TOOL_DELTAS = 20;

const weatherParameters = { type: 'object', properties: { city: { type: 'string' }, note: { type: 'string' } }, required: ['city'] };

/**
 * The realistic upstream delay: a whole reply after 300 ms, or a stream whose first token comes 300 ms
 * after its head. The fake upstream reads it from the system prompt (bench/upstream.ts), which both
 * routes carry upstream. At 100 connections such a scenario runs at about 300 requests a second, where
 * what the gateway costs shows in its CPU time per request and the latency it adds, not in req/s.
 */
export const UPSTREAM_DELAY_MS = 300;
const DELAY_SYSTEM = `bench: first token after ${UPSTREAM_DELAY_MS} ms`;
const DELAYED_CONNECTIONS = 100;

/** A native messages request; `model` is the alias, so the gateway resolves it. */
function nativeRequest(fields: Record<string, unknown>): BenchRequest {
  return { path: '/v1/messages', headers: NATIVE_HEADERS, body: JSON.stringify({ model: 'sonnet', messages: MESSAGES, ...fields }) };
}

/** A chat-completions request for the same reply as `nativeRequest` with the same fields. */
function chatRequest(fields: Record<string, unknown>, system?: string): BenchRequest {
  const messages = system ? [{ role: 'system', content: system }, ...MESSAGES] : MESSAGES;
  return { path: '/v1/chat/completions', headers: CHAT_HEADERS, body: JSON.stringify({ model: 'sonnet', messages, ...fields }) };
}

export const SCENARIOS: Scenario[] = [
  { id: 'native-json', title: 'native, non-streaming', stream: false, floor: 'native-json', completeMarker: '"type":"message"',
    request: nativeRequest({ max_tokens: 64 }) },
  { id: 'native-stream-5', title: 'native, streaming, 5 deltas', stream: true, floor: 'native-stream-5', completeMarker: 'event: message_stop',
    request: nativeRequest({ max_tokens: 5, stream: true }) },
  { id: 'native-stream-200', title: 'native, streaming, 200 deltas', stream: true, floor: 'native-stream-200', completeMarker: 'event: message_stop',
    request: nativeRequest({ max_tokens: 200, stream: true }) },
  { id: 'chat-json', title: 'chat-completions, non-streaming', stream: false, floor: 'native-json', completeMarker: '"chat.completion"',
    request: chatRequest({ max_tokens: 64 }) },
  { id: 'chat-stream-200', title: 'chat-completions, streaming, 200 deltas', stream: true, floor: 'native-stream-200', completeMarker: 'data: [DONE]',
    request: chatRequest({ max_tokens: 200, stream: true }) },
  { id: 'chat-stream-tools', title: `chat-completions, streaming, tool-call deltas (${TOOL_DELTAS})`, stream: true, floor: 'native-stream-tools',
    completeMarker: 'data: [DONE]',
    request: chatRequest({
      max_tokens: TOOL_DELTAS, stream: true,
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weatherParameters } }],
    }) },
  { id: 'native-json-300ms', title: `native, non-streaming, upstream ${UPSTREAM_DELAY_MS} ms, ${DELAYED_CONNECTIONS} connections`, stream: false,
    floor: 'native-json-300ms', completeMarker: '"type":"message"', connections: DELAYED_CONNECTIONS,
    request: nativeRequest({ max_tokens: 64, system: DELAY_SYSTEM }) },
  { id: 'chat-json-300ms', title: `chat-completions, non-streaming, upstream ${UPSTREAM_DELAY_MS} ms, ${DELAYED_CONNECTIONS} connections`, stream: false,
    floor: 'native-json-300ms', completeMarker: '"chat.completion"', connections: DELAYED_CONNECTIONS,
    request: chatRequest({ max_tokens: 64 }, DELAY_SYSTEM) },
  { id: 'chat-stream-300ms', title: `chat-completions, streaming, 50 deltas, first after ${UPSTREAM_DELAY_MS} ms, ${DELAYED_CONNECTIONS} connections`, stream: true,
    floor: 'native-stream-300ms', completeMarker: 'data: [DONE]', connections: DELAYED_CONNECTIONS,
    request: chatRequest({ max_tokens: 50, stream: true }, DELAY_SYSTEM) },
  // The Responses route (docs/responses.md), beside the chat route: the same upstream replies.
  { id: 'responses-json', title: 'Responses, non-streaming', stream: false, floor: 'native-json', completeMarker: '"object":"response"',
    request: { path: '/v1/responses', headers: CHAT_HEADERS, body: JSON.stringify({ model: 'sonnet', input: MESSAGES, max_output_tokens: 64, store: false }) } },
  { id: 'responses-stream-200', title: 'Responses, streaming, 200 deltas', stream: true, floor: 'native-stream-200', completeMarker: 'event: response.completed',
    request: { path: '/v1/responses', headers: CHAT_HEADERS, body: JSON.stringify({ model: 'sonnet', input: MESSAGES, max_output_tokens: 200, stream: true, store: false }) } },
];

/** The scenario ids, comma-separated, for usage texts and errors. */
export const SCENARIO_IDS = SCENARIOS.map((scenario) => scenario.id).join(', ');

/** The forwarder's scenarios: native requests straight to the upstream (the forwarder reads no header). */
export const FLOORS: Record<FloorId, { title: string; stream: boolean; request: BenchRequest; completeMarker: string; connections?: number }> = {
  'native-json': { title: 'native, non-streaming', stream: false, request: nativeRequest({ max_tokens: 64 }), completeMarker: '"type":"message"' },
  'native-stream-5': { title: 'native, streaming, 5 deltas', stream: true, request: nativeRequest({ max_tokens: 5, stream: true }), completeMarker: 'event: message_stop' },
  'native-stream-200': { title: 'native, streaming, 200 deltas', stream: true, request: nativeRequest({ max_tokens: 200, stream: true }), completeMarker: 'event: message_stop' },
  'native-stream-tools': {
    title: `native, streaming, tool-call deltas (${TOOL_DELTAS})`,
    stream: true,
    completeMarker: 'event: message_stop',
    request: nativeRequest({
      max_tokens: TOOL_DELTAS, stream: true,
      tools: [{ name: 'get_weather', description: 'Weather of a city', input_schema: weatherParameters }],
    }),
  },
  'native-json-300ms': {
    title: `native, non-streaming, upstream ${UPSTREAM_DELAY_MS} ms, ${DELAYED_CONNECTIONS} connections`, stream: false, completeMarker: '"type":"message"',
    connections: DELAYED_CONNECTIONS, request: nativeRequest({ max_tokens: 64, system: DELAY_SYSTEM }),
  },
  'native-stream-300ms': {
    title: `native, streaming, 50 deltas, first after ${UPSTREAM_DELAY_MS} ms, ${DELAYED_CONNECTIONS} connections`, stream: true, completeMarker: 'event: message_stop',
    connections: DELAYED_CONNECTIONS, request: nativeRequest({ max_tokens: 50, stream: true, system: DELAY_SYSTEM }),
  },
};

/** The scenarios a peer gateway (bench/peers) is measured on beside this one: its native and chat routes. */
export const PEER_SCENARIOS: ReadonlySet<ScenarioId> = new Set(['native-json', 'chat-json']);

/**
 * A scenario's request as the Portkey gateway takes it: the same path and body, the upstream named by its
 * own headers (`x-portkey-provider: anthropic`, `x-portkey-custom-host`: the fake upstream's `/v1`), the
 * client's key passed on as the upstream's (Portkey has no keys of its own to check).
 */
export function portkeyRequest(request: BenchRequest, upstreamUrl: string): BenchRequest {
  const headers: Record<string, string> = { ...request.headers, 'x-portkey-provider': 'anthropic', 'x-portkey-custom-host': `${upstreamUrl}/v1` };
  return { path: request.path, headers, body: request.body };
}
