import { expect } from 'chai';
import { mapNativeErrorToChat, mapNativeErrorTypeToStatus, mapStreamErrorToChat } from '../../../translators/native-to-chat-errors';

const body = (type: string, message = 'boom') => ({ type: 'error', error: { type, message } });

describe('upstream error -> chat error', () => {
  const cases: Array<[number, string, number, string, string | null]> = [
    [400, 'invalid_request_error', 400, 'invalid_request_error', null],
    [401, 'authentication_error', 401, 'invalid_request_error', 'invalid_api_key'],
    [402, 'billing_error', 402, 'insufficient_quota', 'insufficient_quota'],
    [403, 'permission_error', 403, 'permission_error', 'permission_error'],
    [404, 'not_found_error', 404, 'invalid_request_error', 'not_found'],
    [413, 'request_too_large', 413, 'invalid_request_error', 'request_too_large'],
    [429, 'rate_limit_error', 429, 'requests', 'rate_limit_exceeded'],
    [500, 'api_error', 500, 'server_error', 'server_error'],
    [504, 'timeout_error', 504, 'server_error', 'server_error'],
    [529, 'overloaded_error', 503, 'server_error', 'server_error'],
    [418, 'teapot_error', 418, 'invalid_request_error', null],
    [502, 'bad_gateway_error', 502, 'server_error', 'server_error'],
  ];
  for (const [status, nativeType, chatStatus, chatType, code] of cases) {
    it(`${status} ${nativeType} -> ${chatStatus} ${chatType} ${code}`, () => {
      const translated = mapNativeErrorToChat(status, body(nativeType));
      expect(translated.status).to.equal(chatStatus);
      expect(translated.body).to.deep.equal({ error: { message: 'boom', type: chatType, param: null, code } });
    });
  }

  it('names the model and context-length cases', () => {
    expect(mapNativeErrorToChat(404, body('not_found_error', 'model: nope')).body.error.code).to.equal('model_not_found');
    expect(mapNativeErrorToChat(400, body('invalid_request_error', 'prompt is too long: 300000 tokens')).body.error.code).to.equal('context_length_exceeded');
  });

  it('keeps the status of an unreadable body, with a generic message', () => {
    const translated = mapNativeErrorToChat(503, '<html>down</html>');
    expect(translated.status).to.equal(503);
    expect(translated.body.error).to.include({ type: 'server_error', message: 'the upstream answered with status 503' });
  });

  it('tells SDKs not to retry billing errors', () => {
    expect(mapNativeErrorToChat(402, body('billing_error')).headers).to.deep.equal({ 'x-should-retry': 'false' });
  });

  it('an in-stream error event gets the status of its native type', () => {
    const cases: Array<[string, number]> = [['overloaded_error', 503], ['rate_limit_error', 429], ['api_error', 500], ['unheard_of', 500]];
    for (const [type, status] of cases) expect(mapStreamErrorToChat(body(type)).status, type).to.equal(status);
    expect(mapNativeErrorTypeToStatus(undefined)).to.equal(500);
    expect(mapStreamErrorToChat(null).status).to.equal(500);
  });
});
