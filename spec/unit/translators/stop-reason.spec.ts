import { expect } from 'chai';
import { mapStopReason } from '../../../translators/stop-reason';

describe('stop reason -> finish reason', () => {
  const cases: Array<[string | null | undefined, string, boolean]> = [
    ['end_turn', 'stop', false],
    ['stop_sequence', 'stop', false],
    ['pause_turn', 'stop', false],
    ['max_tokens', 'length', false],
    ['model_context_window_exceeded', 'length', false],
    ['tool_use', 'tool_calls', false],
    ['refusal', 'content_filter', false],
    ['something_new', 'stop', true],
    ['constructor', 'stop', true],
    [null, 'stop', false],
    [undefined, 'stop', false],
  ];
  for (const [stopReason, finishReason, reported] of cases) {
    it(`${stopReason} -> ${finishReason}${reported ? ' (reported as unknown)' : ''}`, () => {
      const unknown: string[] = [];
      expect(mapStopReason(stopReason, (v) => unknown.push(v))).to.equal(finishReason);
      expect(unknown).to.deep.equal(reported ? [stopReason] : []);
    });
  }
});
