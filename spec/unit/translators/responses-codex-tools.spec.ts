import { expect } from 'chai';
import { convertResponsesInput } from '../../../translators/responses-items';
import { convertNativeReply } from '../../../translators/responses-response';
import { decodeJsonStringFrom, readPartialJsonString } from '../../../translators/responses-stream-items';
import { convertResponsesTools, LOCAL_SHELL_TOOL } from '../../../translators/responses-tools';
import { counterIds } from '../../helpers/responses-fixtures';

/** apply_patch as Codex declares it: a custom tool whose input follows a Lark grammar. */
const APPLY_PATCH = {
  type: 'custom' as const,
  name: 'apply_patch',
  description: 'Use the `apply_patch` tool to edit files.',
  format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF' },
};

describe("Codex's own tools on the Responses route", () => {
  it("keeps a custom tool's grammar: the model is told the format its free-text input must match", () => {
    const { tools } = convertResponsesTools({ tools: [APPLY_PATCH] });
    expect(tools[0]).to.deep.include({ name: 'apply_patch' });
    expect((tools[0] as { description: string }).description).to.contain('lark grammar').and.to.contain('start: begin_patch hunk+ end_patch');
  });

  it('maps local_shell to a native tool taking the argv list, and its call back to a local_shell_call item', () => {
    const converted = convertResponsesTools({ tools: [{ type: 'local_shell' }] });
    expect(converted.tools).to.deep.equal([LOCAL_SHELL_TOOL]);
    expect(converted.dropped).to.deep.equal([]);
    const reply = convertNativeReply({
      id: 'msg_1', type: 'message', role: 'assistant', model: 'm', stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 1 },
      content: [{ type: 'tool_use', id: 'toolu_sh', name: 'local_shell', input: { command: ['bash', '-lc', 'ls'], workdir: '/repo' } }],
    }, { id: 'resp_1', createdAt: 1, model: 'm', request: { model: 'm' }, toolNames: converted.names, newId: counterIds() });
    expect(reply.output).to.deep.equal([{
      type: 'local_shell_call', id: 'fc_1', call_id: 'toolu_sh', status: 'completed',
      action: { type: 'exec', command: ['bash', '-lc', 'ls'], working_directory: '/repo', timeout_ms: null, env: {}, user: null },
    }]);
  });

  it('a local_shell_call and its output sent back become the tool_use and tool_result of the same id', () => {
    const { messages } = convertResponsesInput([
      { role: 'user', content: 'List the files' },
      { type: 'local_shell_call', id: 'lsh_1', call_id: 'toolu_sh', status: 'completed', action: { type: 'exec', command: ['ls'], working_directory: '/repo', timeout_ms: 1000, env: {}, user: null } },
      { type: 'local_shell_call_output', call_id: 'toolu_sh', output: 'a.txt' },
    ]);
    expect(messages.slice(1)).to.deep.equal([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_sh', name: 'local_shell', input: { command: ['ls'], workdir: '/repo', timeout_ms: 1000 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_sh', content: 'a.txt' }] },
    ]);
  });

  it('reads the free text of a custom tool input as its JSON fragments arrive, an escape cut in half waiting for the next', () => {
    const cases: Array<[string, string]> = [
      ['{"inp', ''],
      ['{"input": "', ''],
      ['{"input": "*** Begin', '*** Begin'],
      ['{"input": "line\\', 'line'],
      ['{"input": "line\\n', 'line\n'],
      ['{"input": "caf\\u00', 'caf'],
      ['{"input": "caf\\u00e9 \\"x\\"', 'café "x"'],
      ['{"input": "done"}', 'done'],
    ];
    for (const [json, text] of cases) expect(readPartialJsonString(json, 'input'), json).to.equal(text);
  });

  it('decodes a value fragment by fragment, each once, to what the whole value decodes to (escapes cut anywhere)', () => {
    const json = '{"input": "*** Begin Patch\\n+caf\\u00e9 \\"x\\" \\\\ end"}';
    const start = json.indexOf('"', json.indexOf(':')) + 1;
    for (let size = 1; size <= 5; size++) {
      let text = '';
      let at = start;
      let closed = false;
      const cuts: number[] = [];
      for (let end = start + size; end < json.length; end += size) cuts.push(end);
      cuts.push(json.length);
      for (const end of cuts) {
        const step = decodeJsonStringFrom(json.slice(0, end), at);
        expect(step.next, 'never goes back').to.be.at.least(at);
        text += step.text;
        at = step.next;
        closed = step.closed;
        if (closed) break;
      }
      expect(closed).to.equal(true);
      expect(text, `fragments of ${size}`).to.equal(JSON.parse(json).input);
    }
  });
});

describe('a reply that fills the context window (Responses, whole)', () => {
  it('is failed with code context_length_exceeded, not incomplete: incomplete means the model stopped at max_output_tokens', () => {
    const base = { id: 'msg_1', type: 'message' as const, role: 'assistant' as const, model: 'm', usage: { input_tokens: 1, output_tokens: 1 }, content: [{ type: 'text', text: 'Part' }] };
    const options = { id: 'resp_1', createdAt: 1, model: 'm', request: { model: 'm' }, toolNames: new Map(), newId: counterIds() };
    const full = convertNativeReply({ ...base, stop_reason: 'model_context_window_exceeded' }, options);
    expect(full).to.deep.include({ status: 'failed', incomplete_details: null, error: { code: 'context_length_exceeded', message: "the conversation filled the model's context window" } });
    expect(convertNativeReply({ ...base, stop_reason: 'max_tokens' }, options)).to.deep.include({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });
});
