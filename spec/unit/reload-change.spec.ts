/**
 * A reload says what it applied and what it left: the fields read only at start (the upstream clients'
 * retry and breaker settings, the body limits, the store guard, the state file, the admin token) are
 * named for a restart, field by field, and never listed as reloaded.
 */
import { expect } from 'chai';
import { parseConfig } from '../../lib/config';
import { describeConfigChange } from '../../lib/config/config-source';

const KEY = { id: 'team', key: 'sk-cs4-reload-change-0001' };
const base = { upstream: { url: 'https://up.example', maxRetries: 2 }, keys: [KEY] };

describe('describeConfigChange: what a reload applies and what waits for a restart', () => {
  const cases: Array<[string, Record<string, unknown>, Record<string, string>, { reloaded: string[]; needsRestart: string[] }]> = [
    ['upstream.maxRetries (the clients keep the start\'s retries)', { upstream: { url: 'https://up.example', maxRetries: 5 } }, {}, { reloaded: [], needsRestart: ['upstream.maxRetries'] }],
    ['upstream.url (a new client) with a breaker setting', { upstream: { url: 'https://other.example', maxRetries: 2, breakerThreshold: 9 } }, {}, { reloaded: ['upstream', 'keyGroups'], needsRestart: ['upstream.breakerThreshold'] }],
    ['limits.fileBytes (read per upload)', { limits: { fileBytes: 1024 } }, {}, { reloaded: ['limits'], needsRestart: [] }],
    ['limits.bodyBytes (the body step\'s, built once)', { limits: { bodyBytes: 1024 } }, {}, { reloaded: [], needsRestart: ['limits.bodyBytes'] }],
    ['store.failOpen (the store guard is built at start)', { store: { failOpen: true } }, {}, { reloaded: [], needsRestart: ['store'] }],
    ['ADMIN_TOKEN and GATEWAY_STATE_FILE', {}, { ADMIN_TOKEN: 'a-new-admin-token-0123456789', GATEWAY_STATE_FILE: '/tmp/other.json' }, { reloaded: [], needsRestart: ['stateFile', 'adminToken'] }],
    ['shutdownDelayMs (read at the signal)', { shutdownDelayMs: 0 }, {}, { reloaded: ['shutdownDelayMs'], needsRestart: [] }],
  ];
  for (const [what, change, env, expected] of cases) {
    it(what, () => {
      const previous = parseConfig(base, {});
      const next = parseConfig({ ...base, ...change }, env);
      expect(describeConfigChange(previous, next)).to.deep.equal(expected);
    });
  }
});
