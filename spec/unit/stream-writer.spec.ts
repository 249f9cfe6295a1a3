/** The streamed reply's writer: one write per upstream chunk, nothing after the end (lib/upstream-exchange.ts). */
import { expect } from 'chai';
import type { Response } from 'express';
import { createStreamWriter } from '../../lib/upstream-exchange';

/** A response that records its writes and its end, as far as the writer uses one. */
function recordingResponse() {
  const calls: string[] = [];
  const res = {
    writableEnded: false,
    destroyed: false,
    write(text: string) {
      calls.push(`write ${text}`);
      return true;
    },
    end(text: string) {
      calls.push(`end ${text}`);
      res.writableEnded = true;
      return res;
    },
  };
  return { res, calls };
}

describe('stream writer (one write per upstream chunk)', () => {
  it('writes what one chunk gathered in one write, and nothing for a chunk that gathered nothing', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: a\n\n');
    out.add('data: b\n\n');
    out.flush();
    out.flush();
    out.add('data: c\n\n');
    out.flush();
    expect(calls).to.deep.equal(['write data: a\n\ndata: b\n\n', 'write data: c\n\n']);
  });

  it('ends with what is gathered, and writes nothing after the end', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: last\n\n');
    out.end();
    out.add('data: late\n\n');
    out.flush();
    out.end();
    expect(calls).to.deep.equal(['end data: last\n\n']);
  });

  it('drops what is gathered for a response that was destroyed (the client left)', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: a\n\n');
    res.destroyed = true;
    out.flush();
    out.end();
    expect(calls).to.deep.equal([]);
  });
});
