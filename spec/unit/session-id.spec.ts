/** The session and agent ids of a request (lib/observability/session-id.ts), as Claude Code and Codex send them. */
import { expect } from 'chai';
import { readAgentId, readSessionId } from '../../lib/observability/session-id';

const UUID = '0b7c5a5e-2f4e-4b57-9d6f-2a8a0f6c1e11';

describe('session id of a request (readSessionId)', () => {
  const cases: Array<[string, Record<string, string>, unknown, string | undefined]> = [
    ['Claude Code header', { 'x-claude-code-session-id': UUID }, {}, UUID],
    ['Codex 0.169 header', { 'session-id': 'sess-codex', 'thread-id': 'sess-codex' }, { prompt_cache_key: 'other' }, 'sess-codex'],
    ['older Codex header', { session_id: 'sess-old' }, {}, 'sess-old'],
    ['Claude Code header before Codex header', { 'x-claude-code-session-id': 'cc', 'session-id': 'cx' }, {}, 'cc'],
    ['prompt_cache_key of the body', {}, { prompt_cache_key: 'cache-key-1' }, 'cache-key-1'],
    ['nothing sent', {}, { model: 'x' }, undefined],
    ['a header sent twice (joined by Node)', { 'x-claude-code-session-id': `${UUID}, ${UUID}` }, {}, undefined],
    ['a newline in the header', { 'session-id': 'a\nb' }, {}, undefined],
    ['a CSV formula', { 'session-id': '=HYPERLINK("x")' }, {}, undefined],
    ['129 characters', { 'session-id': 'a'.repeat(129) }, {}, undefined],
    ['128 characters', { 'session-id': 'a'.repeat(128) }, {}, 'a'.repeat(128)],
    ['a non-string prompt_cache_key', {}, { prompt_cache_key: { id: 1 } }, undefined],
    ['a body that is not an object', {}, 'text', undefined],
  ];
  for (const [name, headers, body, expected] of cases) {
    it(`${name} -> ${expected === undefined ? 'none' : expected.slice(0, 20)}`, () => {
      expect(readSessionId(headers, body)).to.equal(expected);
    });
  }

  it('falls back to the body when the header is malformed', () => {
    expect(readSessionId({ 'session-id': 'bad id' }, { prompt_cache_key: 'pck' })).to.equal('pck');
  });
});

describe('agent id of a request (readAgentId)', () => {
  it('reads Claude Code\'s subagent header', () => {
    expect(readAgentId({ 'x-claude-code-session-id': UUID, 'x-claude-code-agent-id': 'agent-a1' })).to.equal('agent-a1');
  });

  it('reads a Codex spawned agent\'s thread, not the main thread (same id as the session)', () => {
    expect(readAgentId({ 'session-id': 's1', 'thread-id': 's1' })).to.equal(undefined);
    expect(readAgentId({ 'session-id': 's1', 'thread-id': 't2', 'x-openai-subagent': 'collab_spawn' })).to.equal('t2');
    expect(readAgentId({ 'session-id': 's1', 'thread-id': 's1', 'x-openai-subagent': 'review' })).to.equal('review');
  });

  it('ignores a malformed agent id', () => {
    expect(readAgentId({ 'x-claude-code-agent-id': 'x'.repeat(200) })).to.equal(undefined);
  });
});
