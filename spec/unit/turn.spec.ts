/** The end of the event loop's turn (lib/turn.ts), which the in-memory store answers through. */
import type http from 'node:http';
import { expect } from 'chai';
import { sendJsonAtEndOfTurn } from '../../lib/json-reply';
import { endOfTurn } from '../../lib/turn';

describe('endOfTurn', () => {
  it('is one promise for every caller of a turn, resolved after the microtasks and ticks of the turn', async () => {
    const events: string[] = [];
    const first = endOfTurn();
    const second = endOfTurn();
    expect(second).to.equal(first);
    void first.then(() => events.push('end of turn'));
    process.nextTick(() => events.push('tick'));
    void Promise.resolve().then(() => events.push('microtask'));
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(events).to.deep.equal(['tick', 'microtask']);
    await first;
    expect(events).to.deep.equal(['tick', 'microtask', 'end of turn']);
  });

  it('gives those that ask while it resolves the next turn\'s promise', async () => {
    const first = endOfTurn();
    let next: Promise<void> | undefined;
    let nextDone = false;
    await first.then(() => {
      next = endOfTurn();
      void next.then(() => (nextDone = true));
    });
    expect(next).not.to.equal(first);
    expect(nextDone).to.equal(false);
    await next;
    expect(nextDone).to.equal(true);
  });

  it('answers after what the turn had already queued: an earlier setImmediate runs first', async () => {
    const events: string[] = [];
    // An immediate queued before the turn's end runs before it: the answer comes after what is queued.
    setImmediate(() => events.push('queued before'));
    await endOfTurn();
    events.push('end of turn');
    expect(events).to.deep.equal(['queued before', 'end of turn']);
  });
});

describe('sendJsonAtEndOfTurn', () => {
  it('writes nothing before the end of the turn, then the reply as sendJson writes it', async () => {
    const calls: unknown[][] = [];
    const res = {
      writeHead: (...args: unknown[]) => calls.push(['writeHead', ...args]),
      end: (body: Buffer) => calls.push(['end', body.toString()]),
    } as unknown as http.ServerResponse;
    const sent = sendJsonAtEndOfTurn(res, 200, { id: 'msg_1', content: [] });
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(calls).to.deep.equal([]);
    await sent;
    const body = JSON.stringify({ id: 'msg_1', content: [] });
    expect(calls).to.deep.equal([
      ['writeHead', 200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length) }],
      ['end', body],
    ]);
  });

  it('rejects, writing nothing, when the body cannot be serialised', async () => {
    const res = { writeHead: () => expect.fail('no head'), end: () => expect.fail('no body') } as unknown as http.ServerResponse;
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    let error: unknown;
    await sendJsonAtEndOfTurn(res, 200, cyclic).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(TypeError);
  });
});
