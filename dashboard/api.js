// Admin API client of the dashboard (the operator's page with the admin token, and people.html with a
// session cookie). The admin token lives in sessionStorage (this tab only, gone when it closes) and
// travels only in the Authorization header, never in a URL.

const TOKEN_STORAGE_KEY = 'model-gateway.adminToken';
const API_BASE = '/admin/v1';

/** An error answered by the admin API: `status` is the HTTP status, `message` the API's own words. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

export function readToken() {
  return sessionStorage.getItem(TOKEN_STORAGE_KEY);
}

export function storeToken(token) {
  sessionStorage.setItem(TOKEN_STORAGE_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_STORAGE_KEY);
}

/**
 * One admin API call: `auth` gives its credential headers and the fetch `credentials` mode. Resolves
 * with the parsed JSON reply; rejects with ApiError carrying the message of the gateway's error body
 * (`{"type":"error","error":{"type","message"}}`), or a description of the network failure (status 0).
 */
async function requestApi(method, path, body, auth) {
  const headers = { ...auth.headers };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(API_BASE + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: auth.credentials,
    });
  } catch (err) {
    throw new ApiError(0, `The gateway could not be reached (${err.message}).`);
  }
  const text = await response.text();
  let payload = null;
  try {
    payload = text ? JSON.parse(text) : null;
  } catch {
    payload = null;
  }
  if (!response.ok) {
    const message = payload?.error?.message ?? `The gateway answered ${response.status} ${response.statusText}.`;
    throw new ApiError(response.status, message);
  }
  return payload;
}

/** Call the admin API with the admin token (`Authorization: Bearer`, no cookie): see requestApi. */
export function callApi(method, path, body, token = readToken()) {
  return requestApi(method, path, body, { headers: { authorization: `Bearer ${token ?? ''}` }, credentials: 'omit' });
}

/**
 * Call the admin API as a person signed in through the identity provider (people.html): the session
 * cookie (HttpOnly, never read here), and on a call that changes something the session's CSRF token
 * (from `GET /admin/v1/me`) in `x-csrf-token`. See requestApi.
 */
export function callWithSession(method, path, body, csrfToken) {
  return requestApi(method, path, body, { headers: method === 'GET' ? {} : { 'x-csrf-token': csrfToken }, credentials: 'same-origin' });
}

export const api = {
  listKeys: () => callApi('GET', '/keys'),
  getKey: (id) => callApi('GET', `/keys/${encodeURIComponent(id)}`),
  createKey: (fields) => callApi('POST', '/keys', fields),
  updateKey: (id, patch) => callApi('PATCH', `/keys/${encodeURIComponent(id)}`, patch),
  rotateKey: (id, gracePeriodSeconds) => callApi('POST', `/keys/${encodeURIComponent(id)}/rotate`, { gracePeriodSeconds }),
  revokeKey: (id) => callApi('POST', `/keys/${encodeURIComponent(id)}/revoke`, {}),
  restoreKey: (id) => callApi('POST', `/keys/${encodeURIComponent(id)}/restore`, {}),
  usage: (id, month) => callApi('GET', `/keys/${encodeURIComponent(id)}/usage?month=${encodeURIComponent(month)}`),
  models: () => callApi('GET', '/models'),
};

// ---- spend (usage over UTC days, the request log) -----------------------------------------------

/** `GET /admin/v1/usage` with `params` ({from, to, groupBy, keyId?, model?}); empty values are left out. */
export function usageOverDays(params) {
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value !== undefined && value !== ''));
  return callApi('GET', `/usage?${query}`);
}

/**
 * Fetch the request log export (`GET /admin/v1/requests`) with the admin token. Resolves with the
 * Response (its body still to read); rejects with ApiError as `callApi` does.
 */
export async function fetchRequestLog(params, token = readToken()) {
  const query = new URLSearchParams(Object.entries(params).filter(([, value]) => value !== undefined && value !== ''));
  let response;
  try {
    response = await fetch(`${API_BASE}/requests?${query}`, { headers: { authorization: `Bearer ${token ?? ''}` }, cache: 'no-store', credentials: 'omit' });
  } catch (err) {
    throw new ApiError(0, `The gateway could not be reached (${err.message}).`);
  }
  if (!response.ok) {
    let message = `The gateway answered ${response.status} ${response.statusText}.`;
    try {
      message = (await response.json())?.error?.message ?? message;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(response.status, message);
  }
  return response;
}
