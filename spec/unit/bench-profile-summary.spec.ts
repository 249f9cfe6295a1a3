/** The bench's CPU profile summary (bench/profile-summary.ts): each busy sample goes to the step whose code is deepest on its stack. */
import { expect } from 'chai';
import { summarizeProfile } from '../../bench/profile-summary';

const DIST = 'file:///srv/gateway/dist';

/** A profile of one stack per sample, each stack written root first as [functionName, url]. */
function profileOf(samples: Array<{ stack: Array<[string, string]>; micros: number }>) {
  const nodes = [{ id: 1, callFrame: { functionName: '(root)', url: '' }, children: [] as number[] }];
  const ids: number[] = [];
  for (const { stack } of samples) {
    let parent = nodes[0];
    for (const [functionName, url] of stack) {
      let node = parent.children.map((id) => nodes[id - 1]).find((n) => n.callFrame.functionName === functionName && n.callFrame.url === url);
      if (!node) {
        node = { id: nodes.length + 1, callFrame: { functionName, url }, children: [] };
        nodes.push(node);
        parent.children.push(node.id);
      }
      parent = node;
    }
    ids.push(parent.id);
  }
  return { nodes, samples: ids, timeDeltas: samples.map((sample) => sample.micros) };
}

const router: [string, string] = ['handleRequest', 'file:///srv/gateway/node_modules/router/lib/layer.js'];

describe('bench profile summary', () => {
  it('gives each sample to the deepest gateway step, helpers to their caller, logger libraries to the log line', () => {
    const { byStep, busyMicros } = summarizeProfile(profileOf([
      { stack: [router, ['', `${DIST}/middleware/auth.js`], ['hashSecret', `${DIST}/lib/keys.js`], ['digest', 'node:internal/crypto/hash']], micros: 10 },
      { stack: [router, ['', `${DIST}/middleware/request-context.js`], ['randomBase62', `${DIST}/lib/keys.js`]], micros: 4 },
      { stack: [router, ['', `${DIST}/middleware/native-proxy.js`], ['web', 'file:///srv/gateway/node_modules/http-proxy/lib/index.js']], micros: 7 },
      { stack: [['finish', `${DIST}/lib/after-response.js`], ['log', 'file:///srv/gateway/node_modules/winston/lib/logger.js'], ['writeSync', 'node:fs']], micros: 5 },
      { stack: [router, ['next', 'file:///srv/gateway/node_modules/router/index.js']], micros: 3 },
      { stack: [['onSocketNT', 'node:_http_client'], ['writev', '']], micros: 6 },
      { stack: [['read', 'file:///srv/gateway/node_modules/body-parser/lib/read.js']], micros: 2 },
      { stack: [['socketOnData', 'node:_http_server']], micros: 8 },
      { stack: [['(idle)', '']], micros: 1000 },
      { stack: [['Module._compile', 'node:internal/modules/cjs/loader'], ['', `${DIST}/lib/app.js`]], micros: 50 },
    ]));
    expect(Object.fromEntries(byStep)).to.deep.equal({
      auth: 10,
      'request context (request id), host check': 4,
      'reply (relay or convert, SSE)': 7,
      'log line': 5,
      'express routing between steps': 3,
      'upstream send': 6,
      'body (read, parse, validate)': 2,
      'node HTTP server, sockets, timers, GC (no gateway frame)': 8,
      'start-up (module loading)': 50,
    });
    expect(busyMicros, 'idle left out').to.equal(95);
  });
});
