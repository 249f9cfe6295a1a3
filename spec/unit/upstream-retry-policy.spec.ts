/** The upstream client's retry policy and credential rotation, with a fixed clock and random source. */
import { expect } from 'chai';
import fc from 'fast-check';
import { createCredentialRotation, isOutcomeUnknown, parseRetryAfter, type AttemptFailure, type AttemptOutcome } from '../../lib/upstream';
import { createSecretRedaction, redactSecret } from '../../lib/upstream/credentials';
import { attemptError, createRetryPolicy, isNotStarted } from '../../lib/upstream/retry-policy';

/** One target's credentials and retry policy, as the client holds them (lib/upstream/target.ts). */
function client(extra: { apiKeys?: string[]; maxRetries?: number } = {}, clock = { now: 1_000_000 }, random = 0) {
  const credentials = createCredentialRotation(extra.apiKeys ?? ['key-a', 'key-b'], 'x-api-key', () => clock.now);
  const planRetry = createRetryPolicy({
    maxRetries: extra.maxRetries ?? 2, retryBaseDelayMs: 500, credentialRestMs: 60_000, maxRetryAfterMs: 20_000, now: () => clock.now, random: () => random,
  }, credentials);
  return { pickCredential: credentials.pick, planRetry, redact: credentials.redact };
}

const status = (code: number, headers: Record<string, string> = {}): AttemptOutcome => ({ status: code, headers });
const socketError = (code: string, reusedSocket = false, timedOut = false, requestSent = false): AttemptOutcome => ({
  error: Object.assign(new Error(code), { code }), timedOut, reusedSocket, requestSent,
});

describe('upstream retry policy', () => {
  it('reads retry-after-ms, retry-after seconds and HTTP dates', () => {
    expect(parseRetryAfter({ 'retry-after-ms': '250' })).to.equal(250);
    expect(parseRetryAfter({ 'retry-after': '3' })).to.equal(3000);
    expect(parseRetryAfter({ 'retry-after': new Date(61_000).toUTCString() }, 1_000)).to.equal(60_000);
    expect(parseRetryAfter({ 'retry-after': 'soon' })).to.equal(undefined);
    expect(parseRetryAfter({})).to.equal(undefined);
  });

  it('backs off exponentially, capped at 8 s, with up to 25% jitter', () => {
    const exact = client({ apiKeys: [], maxRetries: 10 }, undefined, 0);
    expect([0, 1, 2, 3, 4, 5].map((n) => exact.planRetry(exact.pickCredential(), status(503), n))).to.deep.equal([500, 1000, 2000, 4000, 8000, 8000]);
    const jittered = client({ apiKeys: [], maxRetries: 10 }, undefined, 0.999);
    expect(jittered.planRetry(jittered.pickCredential(), status(503), 1)).to.equal(Math.round(1000 * (1 - 0.25 * 0.999)));
  });

  it('retries only what the upstream cannot have run: 429/503/529 and connections lost before the request left, up to maxRetries', () => {
    const c = client({ apiKeys: [] });
    const none = c.pickCredential();
    for (const code of [429, 503, 529]) expect(c.planRetry(none, status(code), 0), String(code)).to.be.a('number');
    // 500 and 502 may come after the upstream began the work: sent again, it could run twice.
    for (const code of [400, 401, 403, 404, 413, 500, 502, 504]) expect(c.planRetry(none, status(code), 0), String(code)).to.equal(null);
    expect(c.planRetry(none, status(503), 2)).to.equal(null);
    for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'EPROTO', 'DEPTH_ZERO_SELF_SIGNED_CERT']) {
      expect(c.planRetry(none, socketError(code), 0), code).to.be.a('number');
    }
    expect(c.planRetry(none, socketError('ECONNREFUSED'), 2)).to.equal(null);
    // A kept-alive socket reset before the request left whole: at once.
    expect(c.planRetry(none, socketError('ECONNRESET', true), 0)).to.equal(0);
    // The same reset once the request had left whole, on a reused socket: the upstream had closed it
    // while idle (its application never saw the request), so at once too.
    expect(c.planRetry(none, socketError('ECONNRESET', true, false, true), 0)).to.equal(0);
    // A fresh socket lost after the request left: the upstream may be running it.
    expect(c.planRetry(none, socketError('ECONNRESET', false, false, true), 0)).to.equal(null);
    // A head timeout is never tried again, whatever was sent.
    expect(c.planRetry(none, socketError('ECONNRESET', false, true), 0)).to.equal(null);
    expect(c.planRetry(none, socketError('ECONNRESET', false, true, true), 0)).to.equal(null);
  });

  it('calls an attempt not started only for a refusal status or a failure before the request left whole', () => {
    expect([429, 503, 529, 500, 502, 504, 200].filter((code) => isNotStarted(status(code)))).to.deep.equal([429, 503, 529]);
    expect(isNotStarted(socketError('ECONNREFUSED'))).to.equal(true);
    expect(isNotStarted(socketError('ECONNRESET', true, false, false))).to.equal(true);
    expect(isNotStarted(socketError('ECONNRESET', true, false, true))).to.equal(true);
    expect(isNotStarted(socketError('ECONNRESET', false, false, true))).to.equal(false);
    expect(isNotStarted(socketError('ECONNRESET', true, true, true))).to.equal(false);
    expect(isNotStarted(socketError('EPIPE', true, false, true))).to.equal(false);
    expect(isNotStarted(socketError('ECONNRESET', false, true, false))).to.equal(false);
  });

  it('marks the 504 of a head timeout and the 502 of a socket lost after the request left as outcomes unknown, not a refused connection', () => {
    const timeout = attemptError(socketError('ECONNRESET', false, true, true) as AttemptFailure);
    expect(timeout).to.include({ status: 504 });
    expect(isOutcomeUnknown(timeout)).to.equal(true);
    const lost = attemptError(socketError('ECONNRESET', false, false, true) as AttemptFailure);
    expect(lost).to.include({ status: 502 });
    expect(isOutcomeUnknown(lost)).to.equal(true);
    const refused = attemptError(socketError('ECONNREFUSED') as AttemptFailure);
    expect(refused).to.include({ status: 502 });
    expect(isOutcomeUnknown(refused)).to.equal(false);
    expect(isOutcomeUnknown(new Error('other'))).to.equal(false);
  });

  it('honours retry-after up to maxRetryAfterMs and x-should-retry: false', () => {
    const c = client({ apiKeys: [] });
    const none = c.pickCredential();
    expect(c.planRetry(none, status(503, { 'retry-after': '2' }), 0)).to.equal(2000);
    expect(c.planRetry(none, status(503, { 'retry-after': '60' }), 0)).to.equal(null);
    expect(c.planRetry(none, status(503, { 'x-should-retry': 'false' }), 0)).to.equal(null);
  });

  it('rests a credential after a 401 or 429 and hands out the other meanwhile', () => {
    const clock = { now: 1_000_000 };
    const c = client({}, clock);
    const a = c.pickCredential();
    expect(a.headers).to.deep.equal({ 'x-api-key': 'key-a' });
    // The other credential is awake: switch at once.
    expect(c.planRetry(a, status(429, { 'retry-after': '90' }), 0)).to.equal(0);
    expect([1, 2, 3].map(() => c.pickCredential().index)).to.deep.equal([1, 1, 1]);
    clock.now += 89_000;
    expect(c.pickCredential().index).to.equal(1);
    clock.now += 2_000;
    expect([1, 2].map(() => c.pickCredential().index)).to.deep.equal([0, 1]);
  });

  it('an affinity (a prompt_cache_key) keeps its credential while it is awake, and leaves the rotation alone', () => {
    const clock = { now: 1_000_000 };
    const c = client({ apiKeys: ['key-a', 'key-b', 'key-c', 'key-d'] }, clock);
    const affinities = ['team-1\nsession-a', 'team-1\nsession-b', 'team-2\nsession-a', 'team-3\nx'];
    const first = affinities.map((affinity) => c.pickCredential(affinity).index);
    expect(affinities.map((affinity) => c.pickCredential(affinity).index)).to.deep.equal(first);
    expect(new Set(first).size, 'affinities spread over the credentials').to.be.greaterThan(1);
    expect([1, 2, 3].map(() => c.pickCredential().index)).to.deep.equal([0, 1, 2]);
    c.planRetry(c.pickCredential(affinities[0]), status(429), 0);
    expect(c.pickCredential(affinities[0]).index, 'a resting credential is skipped').to.equal((first[0] + 1) % 4);
  });

  it('when every credential rests, uses the one that wakes first', () => {
    const clock = { now: 0 };
    const c = client({}, clock);
    c.planRetry(c.pickCredential(), status(401), 0); // key-a rests 60 s
    clock.now += 10_000;
    c.planRetry(c.pickCredential(), status(401), 0); // key-b rests until 70 s
    expect(c.pickCredential().index).to.equal(0);
  });

  it('redacts a credential quoted in part, truncated, URL-encoded or in base64', () => {
    const secret = 'sk-upstream-0123456789abcdefghij/+=';
    const rotation = createCredentialRotation([secret], 'x-api-key', () => 0);
    const texts = [
      `invalid key ${secret.slice(0, 14)}...${secret.slice(-4)}`,
      `key ending ...${secret.slice(-20)} was revoked`,
      `x-api-key=${encodeURIComponent(secret)}`,
      `basic ${Buffer.from(secret).toString('base64')}`,
    ];
    for (const text of texts) {
      const out = rotation.redact(text);
      expect(out, text).to.include('[redacted]');
      expect(out, text).to.not.include(secret.slice(0, 12));
      expect(out, text).to.not.include(secret.slice(-12));
    }
    expect(rotation.redact('nothing secret here')).to.equal('nothing secret here');
  });

  it('redacts, with its probes, exactly what the full search redacts (any secret, any text holding pieces of it)', () => {
    const piece = (secret: string) => fc.tuple(fc.nat(secret.length), fc.nat(secret.length)).map(([a, b]) => secret.slice(Math.min(a, b), Math.max(a, b)));
    const case_ = fc.string({ unit: fc.constantFrom('a', 'b', 'k', '-', '/', '+', '0', '1'), minLength: 1, maxLength: 40 }).chain((secret) =>
      fc.tuple(fc.constant(secret), fc.array(fc.oneof(piece(secret), fc.string({ maxLength: 6 }), fc.constant(encodeURIComponent(secret))), { maxLength: 6 }).map((parts) => parts.join(''))));
    fc.assert(fc.property(case_, ([secret, text]) => {
      expect(createSecretRedaction(secret)(text)).to.equal(redactSecret(text, secret));
    }), { numRuns: 2000 });
  });

  it('redacts every credential from a text', () => {
    expect(client().redact('bad key key-a, also key-b')).to.equal('bad key [redacted], also [redacted]');
  });
});
