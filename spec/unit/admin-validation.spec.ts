import { expect } from 'chai';
import { adminTokenMatches } from '../../lib/admin/admin-auth';
import { checkAllowedModels, createAdminValidators, MAX_GRACE_PERIOD_SECONDS } from '../../lib/admin/admin-schemas';
import { formatKeyView, monthResetsAt, summariseUsage } from '../../lib/admin/key-view';
import { ConfigError, parseConfig } from '../../lib/config';
import { GatewayError } from '../../lib/http/errors';
import { testConfigObject } from '../helpers/gateway';

const MODELS = ['model-sonnet-4.6', 'model-haiku-4.5'];

function rejection(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a validation error');
}

describe('admin body validation', () => {
  const validators = createAdminValidators();

  it('accepts a full create body and a name-only one', () => {
    const body = { id: 'team-a', name: 'Team A', rateLimitPerMinute: 30, allowedModels: ['model-haiku-4.5'], monthlyCreditCap: 12.5 };
    expect(validators.createKey(body)).to.deep.equal(body);
    expect(validators.createKey({ name: 'b' })).to.deep.equal({ name: 'b' });
    expect(validators.createKey({ name: 'c', allowedModels: null, monthlyCreditCap: null })).to.deep.include({ allowedModels: null });
  });

  const badCreates: Array<[string, unknown, RegExp]> = [
    ['no name', { rateLimitPerMinute: 5 }, /^name: field required/],
    ['empty name', { name: '' }, /^name: /],
    ['body not an object', ['name'], /request body must be a JSON object/],
    ['body null', null, /request body must be a JSON object/],
    ['unknown field', { name: 'a', secret: 'sk-cs4-x' }, /unknown field "secret" \(fields: id, keyGroup, name, rateLimitPerMinute, allowedModels, monthlyCreditCap, alertThresholds, team, owner\)/],
    ['fractional rate limit', { name: 'a', rateLimitPerMinute: 1.5 }, /^rateLimitPerMinute: must be integer/],
    ['zero rate limit', { name: 'a', rateLimitPerMinute: 0 }, /^rateLimitPerMinute: must be >= 1/],
    ['negative cap', { name: 'a', monthlyCreditCap: -1 }, /^monthlyCreditCap: must be >= 0/],
    ['cap as a string', { name: 'a', monthlyCreditCap: '10' }, /^monthlyCreditCap: must be number,null/],
    ['empty allowedModels', { name: 'a', allowedModels: [] }, /^allowedModels: must NOT have fewer than 1 items/],
    ['model twice', { name: 'a', allowedModels: ['model-haiku-4.5', 'model-haiku-4.5'] }, /allowedModels: lists a model twice/],
    ['bad id', { name: 'a', id: 'has space' }, /^id: must match pattern/],
  ];
  for (const [label, body, message] of badCreates) {
    it(`rejects a create body with ${label} (400, names the field)`, () => {
      const error = rejection(() => validators.createKey(body));
      expect(error.status).to.equal(400);
      expect(error.nativeType).to.equal('invalid_request_error');
      expect(error.message).to.match(message);
    });
  }

  it('allowedModels must name catalogue IDs, not aliases or unknown models', () => {
    expect(() => checkAllowedModels(['model-haiku-4.5'], MODELS)).not.to.throw();
    expect(() => checkAllowedModels(null, MODELS)).not.to.throw();
    expect(() => checkAllowedModels(undefined, MODELS)).not.to.throw();
    for (const bad of ['haiku', 'model-haiku-9']) {
      const error = rejection(() => checkAllowedModels(['model-sonnet-4.6', bad], MODELS));
      expect(error.status).to.equal(400);
      expect(error.message).to.equal(`allowedModels: "${bad}" is not a catalogue model id of key group "default"; choose from model-sonnet-4.6, model-haiku-4.5 (GET /admin/v1/models)`);
    }
  });

  it('patch: needs at least one field and takes no id', () => {
    expect(rejection(() => validators.patchKey({})).message).to.match(/give at least one field to change/);
    expect(rejection(() => validators.patchKey({ id: 'x' })).message).to.match(/unknown field "id"/);
    expect(rejection(() => validators.patchKey({ revoked: false })).message).to.match(/unknown field "revoked"/);
    expect(validators.patchKey({ monthlyCreditCap: null })).to.deep.equal({ monthlyCreditCap: null });
  });

  it('rotate: grace period is whole seconds from 0 to 30 days', () => {
    expect(validators.rotateKey({})).to.deep.equal({});
    expect(validators.rotateKey({ gracePeriodSeconds: 0 })).to.deep.equal({ gracePeriodSeconds: 0 });
    expect(rejection(() => validators.rotateKey({ gracePeriodSeconds: MAX_GRACE_PERIOD_SECONDS + 1 })).message).to.match(/^gracePeriodSeconds: must be <= 2592000/);
    expect(rejection(() => validators.rotateKey({ gracePeriodSeconds: -1 })).message).to.match(/^gracePeriodSeconds: must be >= 0/);
    expect(rejection(() => validators.rotateKey({ graceMs: 5 })).message).to.match(/unknown field "graceMs"/);
  });

  it('revoke: takes no fields', () => {
    expect(validators.revokeKey({})).to.deep.equal({});
    expect(rejection(() => validators.revokeKey({ reason: 'x' })).message).to.match(/unknown field "reason"/);
  });
});

describe('admin token', () => {
  it('matches only the exact token', () => {
    const token = 'admin-token-0123456789abcdef';
    expect(adminTokenMatches(token, token)).to.equal(true);
    expect(adminTokenMatches(`${token}x`, token)).to.equal(false);
    expect(adminTokenMatches(token.slice(0, -1), token)).to.equal(false);
    expect(adminTokenMatches('', token)).to.equal(false);
    expect(adminTokenMatches(token.toUpperCase(), token)).to.equal(false);
  });

  it('is off when ADMIN_TOKEN is unset or empty, and refused at start when weak or shaped like an API key', () => {
    const raw = testConfigObject('http://127.0.0.1:1');
    expect(parseConfig(raw, {}).adminToken).to.equal(null);
    expect(parseConfig(raw, { ADMIN_TOKEN: '' }).adminToken).to.equal(null);
    expect(parseConfig(raw, { ADMIN_TOKEN: 'a-long-enough-admin-token' }).adminToken).to.equal('a-long-enough-admin-token');
    expect(() => parseConfig(raw, { ADMIN_TOKEN: 'short' })).to.throw(ConfigError, /ADMIN_TOKEN must be at least 16 characters/);
    expect(() => parseConfig(raw, { ADMIN_TOKEN: 'has a space in the token' })).to.throw(ConfigError, /without spaces/);
    expect(() => parseConfig(raw, { ADMIN_TOKEN: 'sk-cs4-looks-like-an-api-key' })).to.throw(ConfigError, /must not look like an API key/);
  });
});

describe('admin key view and months', () => {
  it('writes when a month\'s cap resets', () => {
    expect(monthResetsAt('2025-12')).to.equal('2026-01-01T00:00:00.000Z');
    expect(monthResetsAt('2025-02')).to.equal('2025-03-01T00:00:00.000Z');
  });

  it('shows a key without any secret, with status and spend', () => {
    const view = formatKeyView({
      id: 'k', name: 'K', last4: 'abcd', createdAt: '2025-01-01T00:00:00.000Z', revoked: true, rateLimitPerMinute: 5,
      allowedModels: null, monthlyCreditCap: 10, keyGroup: 'default',
    }, '2025-02', 1.5);
    expect(view).to.deep.equal({
      id: 'k', name: 'K', last4: 'abcd', declaredIn: null, createdAt: '2025-01-01T00:00:00.000Z', status: 'revoked', keyGroup: 'default',
      rateLimitPerMinute: 5, allowedModels: null, monthlyCreditCap: 10, spend: { month: '2025-02', credits: 1.5 }, alertThresholds: null, team: null, owner: null,
    });
  });

  it('sums usage and orders models by credits', () => {
    const row = (model: string, credits: number, requests: number) => ({
      model, credits, requests, inputTokens: 10 * requests, outputTokens: 5 * requests, cacheCreationInputTokens: 1, cacheReadInputTokens: 2,
    });
    const { models, totals } = summariseUsage([row('a', 1, 1), row('b', 3, 2)]);
    expect(models.map((m) => m.model)).to.deep.equal(['b', 'a']);
    expect(totals).to.deep.equal({ requests: 3, inputTokens: 30, outputTokens: 15, cacheCreationInputTokens: 2, cacheReadInputTokens: 4, credits: 4 });
    expect(summariseUsage([]).totals.credits).to.equal(0);
  });
});
