import { expect } from 'chai';
import type { Request, Response } from 'express';
import { createVersionHeader, parseVersionHeader } from '../../middleware/version-header';

describe('version header', () => {
  const accepted: Array<[string, Record<string, string>]> = [
    ['anthropic-version 2023-06-01', { 'anthropic-version': '2023-06-01' }],
    ['vendor-version 2023-06-01 (the spec name)', { 'vendor-version': '2023-06-01' }],
    ['a later version (native SDK 1.x)', { 'anthropic-version': '2026-10-21' }],
  ];
  for (const [name, headers] of accepted) {
    it(`accepts ${name}`, () => {
      expect(parseVersionHeader(headers)).to.equal(Object.values(headers)[0]);
    });
  }

  const refused: Array<[string, Record<string, string>, RegExp]> = [
    ['a missing header', {}, /missing version header: send "anthropic-version: 2023-06-01"/],
    ['an earlier version', { 'anthropic-version': '2023-01-01' }, /earlier than the earliest supported version 2023-06-01/],
    ['a malformed value', { 'anthropic-version': 'latest' }, /anthropic-version header: "latest" is not a version/],
    ['an impossible date', { 'anthropic-version': '2024-02-30' }, /is not a version/],
    ['a date with a time', { 'vendor-version': '2024-01-01T00:00:00Z' }, /is not a version/],
  ];
  for (const [name, headers, message] of refused) {
    it(`refuses ${name} with 400 naming the header`, () => {
      expect(() => parseVersionHeader(headers)).to.throw(message).with.property('status', 400);
    });
  }

  it('the step remembers accepted values and still refuses every invalid one, also after many distinct versions', () => {
    const step = createVersionHeader();
    const run = (headers: Record<string, string>) => {
      let result: unknown = 'not called';
      step({ headers } as unknown as Request, {} as Response, (err?: unknown) => { result = err; });
      return result as { status?: number } | undefined;
    };
    for (let i = 0; i < 3; i++) expect(run({ 'anthropic-version': '2023-06-01' })).to.equal(undefined);
    for (let day = 1; day <= 28; day++) expect(run({ 'anthropic-version': `2030-01-${String(day).padStart(2, '0')}` })).to.equal(undefined);
    for (const [, headers] of refused) expect(run(headers)).to.have.property('status', 400);
    expect(run({ 'vendor-version': '2023-06-01' })).to.equal(undefined);
  });
});
