/** The streamed reply's writer (lib/http/sse.ts): every event reaches the client once, nothing after the end. */
import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { createStreamWriter } from '../../lib/http/sse';

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

describe('stream writer', () => {
  it('ends with what is gathered, and writes nothing after the end', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    out.add('data: a\n\n');
    out.flush();
    out.add('data: last\n\n');
    out.end();
    out.add('data: late\n\n');
    out.flush();
    out.end();
    expect(calls.map((call) => call.replace(/^(write|end) /, '')).join('')).to.equal('data: a\n\ndata: last\n\n');
    expect(calls.filter((call) => call.startsWith('end'))).to.have.length(1);
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

  it('writes relayed bytes as they are, joined with the records of the same chunk in one write', () => {
    const { res, calls } = recordingResponse();
    const out = createStreamWriter(res as unknown as Response);
    const euro = Buffer.from('€');
    out.add(euro.subarray(0, 1));
    out.add(euro.subarray(1));
    out.add('event: error\n\n');
    out.flush();
    expect(calls).to.deep.equal(['write €event: error\n\n']);
  });

  /** A response whose socket is full (every write answers false), and a source that records pause and resume. */
  function fullResponse() {
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      destroyed: false,
      write: () => false,
      end() {},
      destroy() {
        res.destroyed = true;
        res.emit('close');
      },
    });
    const calls: string[] = [];
    const source = { pause: () => calls.push('pause'), resume: () => calls.push('resume') };
    return { res, source, calls };
  }

  it('pauses its source while the client socket is full and resumes it on drain', () => {
    const { res, source, calls } = fullResponse();
    const out = createStreamWriter(res as unknown as Response, source, 1000);
    out.add('data: a\n\n');
    out.flush();
    out.add('data: b\n\n');
    out.flush();
    expect(calls).to.deep.equal(['pause']);
    res.emit('drain');
    expect(calls).to.deep.equal(['pause', 'resume']);
    expect(res.listenerCount('drain') + res.listenerCount('close')).to.equal(0);
  });

  it('disconnects a client that does not drain within stallMs', async () => {
    const { res, source, calls } = fullResponse();
    const out = createStreamWriter(res as unknown as Response, source, 20);
    out.add('data: a\n\n');
    out.flush();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(res.destroyed).to.equal(true);
    expect(calls).to.deep.equal(['pause']);
  });
});
