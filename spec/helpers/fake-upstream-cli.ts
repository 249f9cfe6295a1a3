/**
 * `npm run fake-upstream -- --port 9001 [flags]`: the tests' fake native upstream (fake-upstream.ts) as
 * a process anyone can start, to try a pool, failover or a rolling restart on a laptop
 * (docs/production.md). It listens on 127.0.0.1 only, refuses what the real API refuses (api-rules.ts),
 * and answers every message request with a text reply ("Hello, world"; streamed when asked), after
 * these behaviours:
 *
 *   --latency-ms N       wait N ms before the reply (a stream: before its first event) (default 0)
 *   --error-rate R       answer a fraction R (0 to 1) of message requests with --error-status (default 0)
 *   --error-status S     529 (`overloaded_error`) or 429 (`rate_limit_error` with `retry-after: 1`), as
 *                        the API answers them (https://docs.anthropic.com/en/api/errors) (default 529)
 *   --stream-pause-ms N  pause N ms between a stream's text deltas (default 0)
 *
 * Run after `npm run build` (it lives in dist/spec/helpers/).
 */
import { parseArgs } from 'node:util';
import { defaultHandler, nativeTextEvents, startFakeUpstream, type FakeHandler, type FakeReply, type StreamItem } from './fake-upstream';

export interface FakeUpstreamBehaviour {
  latencyMs: number;
  errorRate: number;
  errorStatus: 429 | 529;
  streamPauseMs: number;
}

/**
 * Read the command line's flags.
 * @throws Error naming the flag whose value is not allowed (the parser itself names unknown flags)
 */
export function parseFakeUpstreamArgs(args: string[]): FakeUpstreamBehaviour & { port: number } {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      port: { type: 'string' },
      'latency-ms': { type: 'string', default: '0' },
      'error-rate': { type: 'string', default: '0' },
      'error-status': { type: 'string', default: '529' },
      'stream-pause-ms': { type: 'string', default: '0' },
    },
  });
  const number = (flag: string, value: string | undefined, ok: (n: number) => boolean): number => {
    const n = Number(value);
    if (value === undefined || value.trim() === '' || !Number.isFinite(n) || !ok(n)) throw new Error(`--${flag}: "${value}" is not allowed`);
    return n;
  };
  return {
    port: number('port', values.port, (n) => Number.isInteger(n) && n >= 1 && n <= 65535),
    latencyMs: number('latency-ms', values['latency-ms'], (n) => Number.isInteger(n) && n >= 0),
    errorRate: number('error-rate', values['error-rate'], (n) => n >= 0 && n <= 1),
    errorStatus: number('error-status', values['error-status'], (n) => n === 429 || n === 529) as 429 | 529,
    streamPauseMs: number('stream-pause-ms', values['stream-pause-ms'], (n) => Number.isInteger(n) && n >= 0),
  };
}

/** The handler of a behaviour: the default reply, delayed, paced, or now and then the error. */
export function createBehaviourHandler(behaviour: FakeUpstreamBehaviour, random: () => number = Math.random): FakeHandler {
  return (request) => {
    const messages = request.url.split('?')[0] === '/v1/messages';
    if (messages && random() < behaviour.errorRate) return errorReply(behaviour);
    const reply = defaultHandler(request);
    if (reply.kind === 'json') return { ...reply, delayMs: behaviour.latencyMs };
    if (reply.kind !== 'stream') return reply;
    const events = nativeTextEvents(['Hello', ', world'], undefined, request.body?.model);
    const paced: StreamItem[] = events.flatMap((event) => (event.event === 'content_block_delta' && behaviour.streamPauseMs > 0 ? [{ pauseMs: behaviour.streamPauseMs }, event] : [event]));
    return { kind: 'stream', events: behaviour.latencyMs > 0 ? [{ pauseMs: behaviour.latencyMs }, ...paced] : paced };
  };
}

function errorReply(behaviour: FakeUpstreamBehaviour): FakeReply {
  if (behaviour.errorStatus === 429) {
    return { kind: 'json', status: 429, headers: { 'retry-after': '1' }, delayMs: behaviour.latencyMs, body: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' } } };
  }
  return { kind: 'json', status: 529, delayMs: behaviour.latencyMs, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };
}

async function main(): Promise<void> {
  const { port, ...behaviour } = parseFakeUpstreamArgs(process.argv.slice(2));
  const fake = await startFakeUpstream(createBehaviourHandler(behaviour), { port, record: false });
  process.stdout.write(`fake upstream listening on ${fake.url} ${JSON.stringify(behaviour)}\n`);
  const stop = () => void fake.close().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`fake-upstream: ${(err as Error).message}\nusage: npm run fake-upstream -- --port N [--latency-ms N] [--error-rate 0..1] [--error-status 529|429] [--stream-pause-ms N]\n`);
    process.exit(1);
  });
}
