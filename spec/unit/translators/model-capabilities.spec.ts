import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../../lib/config';
import { convertChatRequest } from '../../../translators/chat-to-native-request';
import { applyModelRules, nearestEffort, type ModelCapabilities, type TunableRequest } from '../../../translators/model-capabilities';
import { convertResponsesRequest, DEFAULT_THINKING_BUDGETS } from '../../../translators/responses-request';

const config = loadConfig(path.resolve(__dirname, '..', '..', '..', '..', 'config.json'), {});
/** The capabilities config.json ships for a catalogue model. */
function caps(id: string): ModelCapabilities {
  const model = config.models.find((m) => m.id === id);
  expect(model?.capabilities, id).to.be.an('object');
  return model!.capabilities!;
}

function apply(id: string, request: Partial<TunableRequest>, effort?: string, clientLimit = false) {
  const native: TunableRequest = { max_tokens: caps(id).maxOutputTokens, ...request };
  const result = applyModelRules(native, { effort, clientLimit, capabilities: caps(id), thinkingBudgets: DEFAULT_THINKING_BUDGETS, effortField: 'reasoning_effort' });
  return { native, ...result };
}

describe('model capabilities: the shipped catalogue', () => {
  it('every catalogue model has capabilities, and the aliases name models of each thinking mode', () => {
    for (const model of config.models) expect(model.capabilities, model.id).to.include.keys('thinking', 'sampling', 'maxOutputTokens', 'contextWindow', 'minCacheableTokens');
    expect(caps(config.aliases.opus).thinking).to.equal('adaptive');
    expect(caps(config.aliases.sonnet).thinking).to.equal('both');
    expect(caps(config.aliases.haiku).thinking).to.equal('budget');
  });
});

describe('model capabilities: rules per model (table)', () => {
  const cases: Array<{ title: string; model: string; effort?: string; request?: Partial<TunableRequest>; clientLimit?: boolean; expected: Partial<TunableRequest>; absent?: string[]; dropped?: string[] }> = [
    { title: 'opus 4.8: effort -> adaptive thinking plus output_config.effort', model: 'model-opus-4.8', effort: 'high', expected: { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } } },
    { title: 'opus 4.8: xhigh is a level it takes', model: 'model-opus-4.8', effort: 'xhigh', expected: { output_config: { effort: 'xhigh' } } },
    { title: 'opus 4.8: none -> no thinking field at all (thinking is off unless asked)', model: 'model-opus-4.8', effort: 'none', expected: {}, absent: ['thinking', 'output_config'] },
    { title: 'opus 4.8: minimal -> no thinking', model: 'model-opus-4.8', effort: 'minimal', expected: {}, absent: ['thinking'] },
    { title: 'opus 4.8: temperature, top_p and top_k are dropped', model: 'model-opus-4.8', request: { temperature: 0.2, top_p: 0.9, top_k: 5 }, expected: {}, absent: ['temperature', 'top_p', 'top_k'], dropped: ['temperature', 'top_p', 'top_k'] },
    { title: 'opus 4.7: the same adaptive form', model: 'model-opus-4.7', effort: 'low', expected: { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } } },
    { title: 'opus 4.6: adaptive (the budget form is deprecated); xhigh -> high', model: 'model-opus-4.6', effort: 'xhigh', expected: { thinking: { type: 'adaptive' }, output_config: { effort: 'high' } } },
    { title: 'opus 4.6: temperature with top_p keeps temperature only', model: 'model-opus-4.6', request: { temperature: 0.2, top_p: 0.9 }, expected: { temperature: 0.2 }, absent: ['top_p'], dropped: ['top_p'] },
    { title: 'opus 4.6: top_p alone passes', model: 'model-opus-4.6', request: { top_p: 0.9, top_k: 4 }, expected: { top_p: 0.9, top_k: 4 } },
    { title: 'sonnet 4.6: thinking drops the sampling fields', model: 'model-sonnet-4.6', effort: 'medium', request: { temperature: 0.2, top_k: 3 }, expected: { output_config: { effort: 'medium' } }, absent: ['temperature', 'top_k'], dropped: ['temperature', 'top_k'] },
    { title: 'haiku 4.5: budget only; no client limit: at most half the ceiling thinks', model: 'model-haiku-4.5', effort: 'high', expected: { max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: 16384 } }, absent: ['output_config'] },
    { title: 'haiku 4.5: the budget stays below the client limit', model: 'model-haiku-4.5', effort: 'high', request: { max_tokens: 5000 }, clientLimit: true, expected: { thinking: { type: 'enabled', budget_tokens: 4999 } } },
    { title: 'haiku 4.5: temperature and top_p together keep temperature', model: 'model-haiku-4.5', request: { temperature: 0.5, top_p: 0.5 }, expected: { temperature: 0.5 }, absent: ['top_p'], dropped: ['top_p'] },
    { title: 'haiku 4.5: a limit above the ceiling is lowered to it', model: 'model-haiku-4.5', request: { max_tokens: 100000 }, clientLimit: true, expected: { max_tokens: 64000 } },
    { title: 'opus 5 (thinks by default): none -> thinking disabled', model: 'model-opus-5', effort: 'none', expected: { thinking: { type: 'disabled' } }, absent: ['output_config'] },
    { title: 'opus 5: max is a level it takes', model: 'model-opus-5', effort: 'max', expected: { thinking: { type: 'adaptive' }, output_config: { effort: 'max' } } },
    { title: 'fable 5 (always thinks): none -> the lowest effort', model: 'model-fable-5', effort: 'none', expected: { thinking: { type: 'adaptive' }, output_config: { effort: 'low' } } },
    { title: 'a forced tool choice leaves thinking out', model: 'model-opus-4.8', effort: 'high', request: { tool_choice: { type: 'any' } }, expected: {}, absent: ['thinking', 'output_config'] },
    { title: 'a forced tool choice on a model thinking by default disables it', model: 'model-opus-5', effort: 'high', request: { tool_choice: { type: 'tool' } }, expected: { thinking: { type: 'disabled' } } },
    { title: 'a forced tool choice without an effort on a model thinking by default disables it too', model: 'model-opus-5', request: { tool_choice: { type: 'any' } }, expected: { thinking: { type: 'disabled' } }, absent: ['output_config'] },
    { title: 'a forced tool choice on a model that always thinks becomes auto', model: 'model-fable-5', request: { tool_choice: { type: 'tool', name: 'f' } as { type: string } }, expected: { tool_choice: { type: 'auto' } } },
  ];
  for (const { title, model, effort, request, clientLimit, expected, absent, dropped } of cases) {
    it(title, () => {
      const result = apply(model, request ?? {}, effort, clientLimit);
      for (const [field, value] of Object.entries(expected)) expect(result.native[field as keyof TunableRequest], field).to.deep.equal(value);
      for (const field of absent ?? []) expect(result.native).not.to.have.property(field);
      expect(result.dropped).to.deep.equal(dropped ?? []);
    });
  }

  it('nearestEffort: itself, else the highest below, else the lowest accepted', () => {
    expect(nearestEffort('xhigh', ['low', 'medium', 'high', 'max'])).to.equal('high');
    expect(nearestEffort('low', ['medium', 'high'])).to.equal('medium');
    expect(nearestEffort('high', [])).to.equal(undefined);
  });
});

describe('model capabilities: both translated routes', () => {
  const opus = config.models.find((m) => m.id === config.aliases.opus)!;

  it('chat reasoning_effort on opus reaches the upstream as adaptive thinking with the effort; refused sampling fields are named', () => {
    const { request, droppedParams } = convertChatRequest(
      { model: 'opus', messages: [{ role: 'user', content: 'Hi' }], reasoning_effort: 'medium', temperature: 0.3, top_p: 0.8 },
      { upstreamModel: opus.upstreamModel, defaultMaxTokens: 128000, capabilities: opus.capabilities, thinkingBudgets: DEFAULT_THINKING_BUDGETS },
    );
    expect(request).to.deep.include({ thinking: { type: 'adaptive' }, output_config: { effort: 'medium' }, max_tokens: 128000 });
    expect(request).not.to.have.any.keys('temperature', 'top_p');
    expect(droppedParams).to.deep.equal(['temperature', 'top_p']);
  });

  it('Responses reasoning.effort on opus: adaptive thinking, never the budget form', () => {
    const { request } = convertResponsesRequest(
      { model: 'opus', input: 'Hi', reasoning: { effort: 'high' } },
      { upstreamModel: opus.upstreamModel, defaultMaxTokens: 128000, capabilities: opus.capabilities, thinkingBudgets: DEFAULT_THINKING_BUDGETS },
    );
    expect(request.thinking).to.deep.equal({ type: 'adaptive' });
    expect(request.output_config).to.deep.equal({ effort: 'high' });
  });

  it('without capabilities the effort is ignored with a warning (nothing is inferred from the name)', () => {
    const { request, warnings } = convertChatRequest(
      { model: 'opus', messages: [{ role: 'user', content: 'Hi' }], reasoning_effort: 'high' },
      { upstreamModel: 'model-opus-4.8', defaultMaxTokens: 4096 },
    );
    expect(request).not.to.have.property('thinking');
    expect(warnings.join()).to.contain('reasoning_effort high ignored');
  });
});

describe('model capabilities: the docs say what the translation sends', () => {
  it('docs/wire-formats.md maps chat reasoning_effort as the translator does: adaptive + effort, or a budget', () => {
    const table = readFileSync(path.resolve(__dirname, '..', '..', '..', '..', 'docs', 'wire-formats.md'), 'utf8');
    const row = table.split('\n').find((line) => line.startsWith('| `reasoning_effort` | `thinking`'));
    const [, , mapping] = row!.split(' | ');
    const haiku = config.models.find((m) => m.id === config.aliases.haiku)!;
    const { request } = convertChatRequest(
      { model: 'haiku', messages: [{ role: 'user', content: 'Hi' }], reasoning_effort: 'medium' },
      { upstreamModel: haiku.upstreamModel, defaultMaxTokens: 64000, capabilities: haiku.capabilities, thinkingBudgets: DEFAULT_THINKING_BUDGETS },
    );
    expect(request.thinking).to.deep.equal({ type: 'enabled', budget_tokens: DEFAULT_THINKING_BUDGETS.medium });
    expect(mapping).to.include('`thinking: {type: "adaptive"}` + `output_config.effort`').and.include('`thinking: {type: "enabled", budget_tokens}`');
  });
});
