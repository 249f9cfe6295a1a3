/** Upstream targets: their health (cooldown, breaker, one trial) and the choice (weights, models, sessions). */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { readSessionId } from '../../lib/observability/session-id';
import { createUpstreamClient, createUpstreamPool } from '../../lib/upstream';
import { createHeldTarget, type HeldTarget, type UpstreamTargetOptions } from '../../lib/upstream/target';
import { createTargetChoice, MAX_SESSIONS } from '../../lib/upstream/target-choice';
import { TargetHealth } from '../../lib/upstream/target-health';

const SETTINGS = {
  maxRetries: 2, retryBaseDelayMs: 1, maxRetryAfterMs: 1000, credentialRestMs: 1000, now: () => 0, random: () => 0,
  auth: 'x-api-key' as const, breakerThreshold: 3, breakerCooldownMs: 30_000,
};

function targets(...options: Array<Partial<UpstreamTargetOptions>>): HeldTarget[] {
  return options.map((option, index) => createHeldTarget({ id: `t${index}`, url: `http://127.0.0.1:${index + 1}`, ...option }, index, SETTINGS));
}

const model = (id: string) => ({ model: { id } });

describe('upstream target health', () => {
  it('opens the breaker after consecutive failures, then lets one trial through', () => {
    const health = new TargetHealth({ breakerThreshold: 3, breakerCooldownMs: 1000 });
    health.failed(0);
    health.failed(0);
    expect(health.available(0)).to.equal(true);
    health.failed(10);
    expect(health.view(10)).to.deep.equal({ state: 'breaker_open', until: 1010, consecutiveFailures: 3 });
    expect(health.available(1009)).to.equal(false);
    expect(health.available(1010)).to.equal(true);
    health.take(() => 1010);
    expect(health.available(1010), 'a second request during the trial').to.equal(false);
    health.failed(1020);
    expect(health.view(1020)).to.deep.include({ state: 'breaker_open', until: 2020 });
    health.take(() => 2020);
    health.succeeded();
    expect(health.view(2020)).to.deep.equal({ state: 'healthy', until: null, consecutiveFailures: 0 });
  });

  it('cools down for the retry-after the upstream asked for, without counting a failure', () => {
    const health = new TargetHealth();
    health.failed(0, 5000);
    expect(health.view(0)).to.deep.equal({ state: 'cooling_down', until: 5000, consecutiveFailures: 0 });
    expect(health.available(4999)).to.equal(false);
    expect(health.available(5000)).to.equal(true);
  });

  it('gives the trial back when its client went away', () => {
    const health = new TargetHealth({ breakerThreshold: 1, breakerCooldownMs: 10 });
    health.failed(0);
    health.take(() => 10);
    health.released();
    expect(health.available(10)).to.equal(true);
  });
});

describe('upstream target choice', () => {
  it('splits requests by weight exactly (3:1 over 400), evenly interleaved', () => {
    const list = targets({ weight: 3 }, { weight: 1 });
    const choice = createTargetChoice(list);
    const counts = [0, 0];
    const first8: number[] = [];
    for (let i = 0; i < 400; i++) {
      const index = choice.choose(undefined, 0, 0).index;
      counts[index]++;
      if (i < 8) first8.push(index);
    }
    expect(counts).to.deep.equal([300, 100]);
    expect(first8).to.deep.equal([0, 0, 1, 0, 0, 0, 1, 0]);
  });

  it('keeps a session on its target while it is available, and moves it when pinned elsewhere', () => {
    const list = targets({ weight: 1 }, { weight: 1 });
    const choice = createTargetChoice(list);
    const route = { sessionId: 'session-1' };
    const first = choice.choose(route, 0, 0);
    choice.pin('session-1', first);
    for (let i = 0; i < 20; i++) expect(choice.choose(route, 0, 0)).to.equal(first);
    // The pinned target failed for this request: another one, which the session is pinned to after.
    const other = choice.choose(route, 1 << first.index, 0);
    expect(other).to.not.equal(first);
    choice.pin('session-1', other);
    expect(choice.choose(route, 0, 0)).to.equal(other);
  });

  it('remembers at most MAX_SESSIONS sessions, forgetting the oldest', () => {
    const list = targets({}, {});
    const choice = createTargetChoice(list);
    for (let i = 0; i <= MAX_SESSIONS; i++) choice.pin(`s${i}`, list[1]);
    // s0 was forgotten: it is spread by weight again (t0 is next in turn); s1 is still pinned.
    expect(choice.choose({ sessionId: 's0' }, 0, 0)).to.equal(list[0]);
    expect(choice.choose({ sessionId: 's1' }, 0, 0)).to.equal(list[1]);
  });

  it('chooses only targets serving the model', () => {
    const list = targets({ weight: 5 }, { weight: 1, models: ['model-haiku-4.5'] });
    const choice = createTargetChoice([list[1], list[0]].sort((a, b) => a.index - b.index));
    for (let i = 0; i < 10; i++) expect(choice.choose(model('model-sonnet-4.6'), 0, 0)).to.equal(list[0]);
    expect(new Set(Array.from({ length: 6 }, () => choice.choose(model('model-haiku-4.5'), 0, 0)))).to.have.length(2);
  });

  it('skips a target that is down; with every target down, takes the one back first', () => {
    const list = targets({}, {});
    const choice = createTargetChoice(list);
    list[0].health.failed(0, 10_000);
    for (let i = 0; i < 5; i++) expect(choice.choose(undefined, 0, 0)).to.equal(list[1]);
    expect(choice.hasUntried(undefined, 1 << 1, 0)).to.equal(false);
    list[1].health.failed(0, 20_000);
    expect(choice.choose(undefined, 0, 0)).to.equal(list[0]);
  });
});

describe('session id', () => {
  it('reads Claude Code, Codex, prompt_cache_key and previous_response_id, in that order', () => {
    expect(readSessionId({ 'x-claude-code-session-id': 'a1', session_id: 'b2' }, { prompt_cache_key: 'c3' })).to.equal('a1');
    expect(readSessionId({ session_id: '0199a-codex' }, { prompt_cache_key: 'c3' })).to.equal('0199a-codex');
    expect(readSessionId({}, { prompt_cache_key: 'c3', previous_response_id: 'resp_1' })).to.equal('c3');
    expect(readSessionId({}, null)).to.equal(undefined);
  });

  it('ignores a value too long or with characters outside the set', () => {
    expect(readSessionId({ 'x-claude-code-session-id': 'x'.repeat(129) }, {})).to.equal(undefined);
    expect(readSessionId({ 'x-claude-code-session-id': 'x'.repeat(128) }, {})).to.have.length(128);
    expect(readSessionId({ 'x-claude-code-session-id': 'a b' }, { prompt_cache_key: 'ok' })).to.equal('ok');
    expect(readSessionId({ 'x-claude-code-session-id': ['a', 'b'] }, { prompt_cache_key: 42 })).to.equal(undefined);
  });
});

describe('upstream pool', () => {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const shipped = require('../../../config.json');
  const configOf = (keyGroups: unknown[]) => parseConfig({ ...shipped, upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: 'TOP_KEY' }, keyGroups }, {});

  it('gives a key group with its own credential on the top-level URL its own client, sending its own credential', () => {
    const config = configOf([{ id: 'default', upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: 'TEAM_KEY' } }]);
    const top = createUpstreamClient({ targets: [{ url: 'http://127.0.0.1:1', apiKeys: ['top-secret'] }], timeoutMs: 1000 });
    const pool = createUpstreamPool({ defaultClient: top, defaultTargets: parseConfig({ ...shipped, upstream: { url: 'http://127.0.0.1:1', apiKeyEnv: 'TOP_KEY' } }, {}).upstream.targets, env: { TEAM_KEY: 'team-secret', TOP_KEY: 'top-secret' } });
    const client = pool.forGroup(config.keyGroups[0]);
    expect(client).to.not.equal(top);
    expect(client.redact('team-secret top-secret')).to.equal('[redacted] top-secret');
    pool.destroy();
  });

  it('shares the top-level client with a group on the top-level targets', () => {
    const config = configOf([]);
    const top = createUpstreamClient({ targets: [{ url: 'http://127.0.0.1:1' }], timeoutMs: config.upstream.timeoutMs });
    const pool = createUpstreamPool({ defaultClient: top, defaultTargets: config.upstream.targets });
    expect(pool.forGroup(config.keyGroups[0])).to.equal(top);
    expect(pool.describe(config.keyGroups)).to.deep.equal([{
      keyGroup: 'default', upstream: 'default',
      targets: [{ id: 'default', provider: 'anthropic', weight: 1, models: null, state: 'healthy', until: null, consecutiveFailures: 0, requests: 0, failures: 0, failovers: 0 }],
    }]);
  });
});
