import { expect } from 'chai';
import fc from 'fast-check';
import { hasDuplicateKeys } from '../../lib/http/json-duplicates';

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

describe('duplicate JSON member names: any JSON', () => {
  /** The reference: a character-by-character scan of valid JSON that records each object's names, unescaped. */
  function referenceHasDuplicates(text: string): boolean {
    JSON.parse(text);
    let found = false;
    const stack: Array<Set<string> | null> = [];
    let i = 0;
    const skipString = () => {
      let out = '';
      i++;
      while (text[i] !== '"') {
        if (text[i] === '\\') {
          const esc = text[i + 1];
          if (esc === 'u') {
            out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
            i += 6;
          } else {
            out += ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[esc] ?? esc;
            i += 2;
          }
        } else out += text[i++];
      }
      i++;
      return out;
    };
    while (i < text.length && !found) {
      const c = text[i];
      if (c === '"') {
        const s = skipString();
        let j = i;
        while (/\s/.test(text[j] ?? '')) j++;
        const names = stack[stack.length - 1];
        if (names && text[j] === ':') {
          if (names.has(s)) found = true;
          names.add(s);
        }
      } else {
        if (c === '{') stack.push(new Set());
        else if (c === '[') stack.push(null);
        else if (c === '}' || c === ']') stack.pop();
        i++;
      }
    }
    return found;
  }

  it('finds a repeated name exactly when a scan of the parsed text does (names with escapes, non-ASCII, any nesting)', () => {
    const name = fc.constantFrom('a', 'b', 'é', 'model', 'mod\\u0065l', '\\u00e9', 'x\\"y', 'a\\\\');
    const value: fc.Arbitrary<string> = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.constant('1'), fc.constant('"s\\"t"'), fc.constant('null'), fc.constant('"é {\\"a\\":1}"')),
      object: fc.array(fc.tuple(name, tie('value') as fc.Arbitrary<string>), { maxLength: 4 })
        .map((members) => `{${members.map(([n, v]) => ` "${n}" : ${v}`).join(',')}}`),
      array: fc.array(tie('value') as fc.Arbitrary<string>, { maxLength: 3 }).map((items) => `[${items.join(',')}]`),
      value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, tie('leaf') as fc.Arbitrary<string>, tie('object') as fc.Arbitrary<string>, tie('array') as fc.Arbitrary<string>),
    })).object;
    fc.assert(fc.property(value, (text) => {
      expect(hasDuplicateKeys(Buffer.from(text)), text).to.equal(referenceHasDuplicates(text));
    }), { numRuns: 2000 });
  });
});
