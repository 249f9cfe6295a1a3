/**
 * `referencedFileIds` (routes/files.ts): every `file_id` a Messages body names, wherever the API
 * lets a block hold one (platform.claude.com/docs/en/build-with-claude/files; the content block params
 * of the Messages API reference), at any depth, without recursion.
 */
import { expect } from 'chai';
import { referencedFileIds } from '../../middleware/file-access';

const fileImage = (id: string) => ({ type: 'image', source: { type: 'file', file_id: id } });

describe('referencedFileIds', () => {
  it('finds a file in every place a block can hold one', () => {
    const body = {
      system: [{ type: 'text', text: 'be brief' }, { type: 'document', source: { type: 'file', file_id: 'file_system' } }],
      messages: [
        { role: 'user', content: 'a string content names nothing' },
        { role: 'user', content: [
          { type: 'document', source: { type: 'file', file_id: 'file_document' } },
          fileImage('file_image'),
          { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'x' }, fileImage('file_in_source_content')] } },
          { type: 'container_upload', file_id: 'file_container' },
          { type: 'tool_result', tool_use_id: 't', content: [{ type: 'search_result', source: 'https://a', title: 'a', content: [{ type: 'text', text: 'x' }] },
            { type: 'document', source: { type: 'content', content: [fileImage('file_in_tool_result')] } }] },
        ] },
        { role: 'assistant', content: [
          { type: 'web_fetch_tool_result', tool_use_id: 's', content: { type: 'web_fetch_result', url: 'https://a', content: { type: 'document', source: { type: 'file', file_id: 'file_web_fetch' } } } },
          { type: 'code_execution_tool_result', tool_use_id: 's', content: { type: 'code_execution_result', content: [{ type: 'code_execution_output', file_id: 'file_code_output' }] } },
          { type: 'bash_code_execution_tool_result', tool_use_id: 's', content: { type: 'bash_code_execution_result', content: [{ type: 'bash_code_execution_output', file_id: 'file_bash_output' }] } },
        ] },
      ],
    };
    expect(referencedFileIds(body).sort()).to.deep.equal([
      'file_bash_output', 'file_code_output', 'file_container', 'file_document', 'file_image',
      'file_in_source_content', 'file_in_tool_result', 'file_system', 'file_web_fetch',
    ]);
  });

  it('skips the arguments of a tool call (the upstream never resolves them) and the fields outside system and messages', () => {
    const body = {
      metadata: { file_id: 'file_metadata' },
      tools: [{ name: 'f', input_schema: { type: 'object', examples: [{ file_id: 'file_example' }] } }],
      messages: [{ role: 'assistant', content: [
        { type: 'tool_use', id: 't', name: 'f', input: { file_id: 'file_argument' } },
        { type: 'server_tool_use', id: 's', name: 'code_execution', input: { file_id: 'file_server_argument' } },
      ] }],
    };
    expect(referencedFileIds(body)).to.deep.equal([]);
  });

  it('names each file once, and nothing for a body without messages or with odd values', () => {
    expect(referencedFileIds({ messages: [{ role: 'user', content: [fileImage('file_a'), fileImage('file_a')] }] })).to.deep.equal(['file_a']);
    for (const odd of [undefined, null, 1, 'text', [], {}, { messages: 'x' }, { messages: [null, 1, [[]]] }, { system: { file_id: 7 } }]) {
      expect(referencedFileIds(odd)).to.deep.equal([]);
    }
  });

  it('walks a body nested 200,000 deep without overflowing the stack', () => {
    let content: unknown = [fileImage('file_deep')];
    for (let i = 0; i < 200_000; i++) content = [{ type: 'tool_result', tool_use_id: 't', content }];
    expect(referencedFileIds({ messages: [{ role: 'user', content }] })).to.deep.equal(['file_deep']);
    let source: unknown = fileImage('file_deep_source');
    for (let i = 0; i < 200_000; i++) source = { type: 'document', source: { type: 'content', content: [source] } };
    expect(referencedFileIds({ system: [source] })).to.deep.equal(['file_deep_source']);
  });
});
