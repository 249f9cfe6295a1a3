/**
 * A native request fitted to one target's row of the capabilities table (capabilities.ts): what it
 * needs (features, for the choice of target) and the request without what the target refuses (beta
 * flags not on its list, refused body fields), with the names of what was removed for the reply's
 * `x-gateway-dropped-params`. Run only for pools with a cloud target: a first-party pool pays nothing.
 */
import { FEATURES, FEATURE_BETAS, type ProviderCapabilities } from './capabilities';
import type { NativeUpstreamRequest } from './provider';

/** Top-level fields and tool types whose presence means a feature, found without parsing the body. */
const BODY_MARKERS: ReadonlyArray<readonly [marker: string, feature: number]> = [
  ['"file_id"', FEATURES.files],
  ['"web_search_', FEATURES.web_search],
  ['"web_fetch_', FEATURES.web_fetch],
  ['"code_execution_', FEATURES.code_execution],
  ['"mcp_servers"', FEATURES.mcp],
];

/**
 * True when `text` holds `marker` (which starts with a quote) as JSON syntax: the quote not escaped
 * (not preceded by an odd run of backslashes), so a string value that merely contains the words does
 * not count. A value equal to the marker's words may still count: the check errs on the side of the
 * capable target.
 */
function hasJsonMarker(text: string, marker: string): boolean {
  for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + 1)) if (isUnescapedAt(text, at)) return true;
  return false;
}

/** True when the quote at `at` is JSON syntax: not preceded by an odd run of backslashes. */
function isUnescapedAt(text: string, at: number): boolean {
  let slashes = 0;
  while (at - slashes - 1 >= 0 && text.charCodeAt(at - slashes - 1) === 0x5c) slashes++;
  return slashes % 2 === 0;
}

/** True when a JSON body asks for a stream (`"stream": true`, the key not inside a string). */
export function asksStream(body: Buffer | undefined): boolean {
  if (!body) return false;
  const text = body.toString('latin1');
  const pattern = /"stream"\s*:\s*true/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    if (isUnescapedAt(text, match.index)) return true;
  }
  return false;
}

/** The beta flags of an `anthropic-beta` header value (comma-separated), trimmed, empty ones left out. */
export function parseBetas(header: string | undefined): string[] {
  if (!header) return [];
  return header.split(',').map((flag) => flag.trim()).filter((flag) => flag !== '');
}

/**
 * The FEATURES a request needs (a bit mask): from its path (Files, Message Batches, count_tokens), its
 * beta flags that change the reply (FEATURE_BETAS) and its body (a `file_id`, a server tool, the MCP
 * connector, a 1-hour cache lifetime).
 * @param request path (with query), lower-case headers and the JSON body as sent
 */
export function featuresNeeded(request: { path: string; headers: Record<string, string>; body?: Buffer }): number {
  let needs = 0;
  const { path } = request;
  if (path.startsWith('/v1/files')) needs |= FEATURES.files;
  else if (path.startsWith('/v1/messages/batches')) needs |= FEATURES.batches;
  else if (path.startsWith('/v1/messages/count_tokens')) needs |= FEATURES.count_tokens;
  for (const flag of parseBetas(request.headers['anthropic-beta'])) {
    for (const [prefix, feature] of FEATURE_BETAS) if (flag.startsWith(prefix)) needs |= FEATURES[feature];
  }
  if (request.body && request.body.length > 0) {
    const text = request.body.toString('latin1');
    for (const [marker, feature] of BODY_MARKERS) if ((needs & feature) === 0 && hasJsonMarker(text, marker)) needs |= feature;
    if (/"ttl"\s*:\s*"1h"/.test(text)) needs |= FEATURES.cache_1h;
  }
  return needs;
}

/** A request fitted to a target, and the names of what was removed from it. */
export interface FittedRequest {
  request: NativeUpstreamRequest;
  /** Beta flags and body fields removed (tool fields as `tools[].name`), in the order found. */
  dropped: string[];
}

/**
 * `request` without what a target with row `caps` refuses: beta flags not on its list, refused
 * top-level body fields, refused tool-definition fields. The body is parsed only when it names a
 * refused field; otherwise the bytes go as they are.
 * @throws SyntaxError when the body names a refused field but is not JSON (the routes send only JSON here)
 */
export function fitRequestToTarget(request: NativeUpstreamRequest, caps: ProviderCapabilities): FittedRequest {
  const dropped: string[] = [];
  let headers = request.headers;
  const betaHeader = headers['anthropic-beta'];
  if (caps.betas !== null && betaHeader !== undefined) {
    const flags = parseBetas(betaHeader);
    const kept = flags.filter((flag) => caps.betas!.has(flag));
    if (kept.length !== flags.length) {
      for (const flag of flags) if (!caps.betas.has(flag)) dropped.push(flag);
      headers = { ...headers };
      if (kept.length > 0) headers['anthropic-beta'] = kept.join(',');
      else delete headers['anthropic-beta'];
    }
  }
  let body = request.body;
  const fields = caps.refusedFields.filter((field) => body?.includes(`"${field}"`));
  const toolFields = caps.refusedToolFields.filter((field) => body?.includes(`"${field}"`));
  if (body && (fields.length > 0 || toolFields.length > 0)) {
    const parsed = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    let changed = false;
    for (const field of fields) {
      if (!(field in parsed)) continue;
      delete parsed[field];
      dropped.push(field);
      changed = true;
    }
    if (toolFields.length > 0 && Array.isArray(parsed.tools)) {
      const found = new Set<string>();
      parsed.tools = parsed.tools.map((tool: unknown) => {
        if (!tool || typeof tool !== 'object') return tool;
        const own = toolFields.filter((field) => field in tool);
        if (own.length === 0) return tool;
        const copy = { ...(tool as Record<string, unknown>) };
        for (const field of own) {
          delete copy[field];
          found.add(field);
        }
        return copy;
      });
      for (const field of found) dropped.push(`tools[].${field}`);
      changed ||= found.size > 0;
    }
    if (changed) body = Buffer.from(JSON.stringify(parsed));
  }
  if (dropped.length === 0) return { request, dropped };
  return { request: { ...request, headers, body }, dropped };
}
