import { expect } from 'chai';
import { hasDuplicateKeys } from '../../lib/json-duplicates';

describe('duplicate JSON member names', () => {
  const cases: Array<[string, string, boolean]> = [
    ['no duplicates', '{"model":"a","messages":[{"role":"user","content":"hi"}],"max_tokens":1}', false],
    ['a repeated top-level name', '{"model":"model-opus-5","max_tokens":1,"model":"model-haiku-4.5"}', true],
    ['a repeated nested name', '{"tools":[{"type":"web_search_20250305","max_uses":100,"max_uses":1}]}', true],
    ['the same name in sibling objects', '{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}', false],
    ['a name repeated through an escape', '{"model":"a","mod\\u0065l":"b"}', true],
    ['names inside string values', '{"text":"\\"model\\": 1, \\"model\\": 2","other":"{\\"a\\":1,\\"a\\":2}"}', false],
    ['escaped backslashes before a quote', '{"a":"x\\\\","a":1}', true],
    ['whitespace before colons', '{ "a" : 1 ,\n "a"\t: 2 }', true],
    ['strings in arrays are not names', '{"a":["a","a"],"b":"a"}', false],
  ];
  for (const [title, text, expected] of cases) {
    it(title, () => {
      JSON.parse(text);
      expect(hasDuplicateKeys(Buffer.from(text))).to.equal(expected);
    });
  }
});
