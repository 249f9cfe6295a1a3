/**
 * What goes upstream from a client's request headers: an allow list, not a drop list. Only the
 * headers the upstream API defines for a request, and the SDK's own descriptive headers, are passed;
 * everything else (the client's credentials, cookies, forwarding headers, hop-by-hop and framing
 * headers such as `connection`, `keep-alive`, `transfer-encoding`, `content-length`, `expect`,
 * `content-encoding`) is the gateway's business and never leaves. The upstream client sets the
 * credential, `content-type`, `content-length` and `accept-encoding` itself.
 *
 * Source: the native Messages API headers (`anthropic-version`, `anthropic-beta`, the other
 * `anthropic-*` request headers such as `anthropic-workspace-id`), the `x-stainless-*` headers the
 * official SDKs add to every request (docs/wire-formats.md section 0), and Claude Code's
 * `x-claude-code-*` labels (its session and agent ids, which the API receives from it directly).
 */
import type http from 'node:http';

/** Header names passed as they are (lower case). */
const PASSED_NAMES = new Set(['accept', 'anthropic-version', 'anthropic-beta', 'user-agent']);

/** Header name families passed: the native API's `anthropic-*` headers, the SDKs' `x-stainless-*` and Claude Code's `x-claude-code-*` ones. */
const PASSED_FAMILY = /^(anthropic-|x-stainless-|x-claude-code-)[a-z0-9-]+$/;

/** True when a client request header named `name` (lower case) may go upstream. */
export function isPassedRequestHeader(name: string): boolean {
  return PASSED_NAMES.has(name) || PASSED_FAMILY.test(name);
}

/**
 * The client's request headers that go upstream on the native route (see the module comment), less
 * any the client's `Connection` header names. A repeated header (an array) is joined with ", " as Node
 * joins it for the gateway.
 * @param headers `IncomingMessage.headers` (lower-case names)
 * @returns a new object; the version header is also read from `vendor-version` (the gateway's own name for it)
 */
export function selectUpstreamHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const passed: Record<string, string> = {};
  // A header the client names in `Connection` is hop-by-hop (RFC 9110 section 7.6.1), whatever its name.
  const hopByHop = new Set(String(headers.connection ?? '').toLowerCase().split(',').map((name) => name.trim()));
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !isPassedRequestHeader(name) || hopByHop.has(name)) continue;
    passed[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const vendorVersion = headers['vendor-version'];
  if (passed['anthropic-version'] === undefined && typeof vendorVersion === 'string') passed['anthropic-version'] = vendorVersion;
  return passed;
}
