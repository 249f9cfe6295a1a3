/**
 * What the fake Bedrock runtime (fake-bedrock.ts) refuses of a request's model and body, each rule
 * with the page it follows. Bedrock answers a refused body with 400 `ValidationException` whose message
 * starts "Malformed input request:" for a schema error (InvokeModel "Errors", ValidationException:
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html).
 */

/** A refusal: status, the exception name sent in `x-amzn-errortype`, and Bedrock's wording. */
export interface BedrockRefusal {
  status: number;
  errorType: string;
  message: string;
}

export function refuse(status: number, errorType: string, message: string): BedrockRefusal {
  return { status, errorType, message };
}

/**
 * The beta flags Bedrock accepts in `anthropic_beta` ("Request and Response", the `anthropic_beta`
 * parameter and the feature pages it links: computer use, token-efficient tools, interleaved thinking,
 * 128K output, 1M context, context management, effort, tool search and tool examples, fine-grained tool
 * streaming; https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html;
 * compaction, "Include the beta header compact-2026-01-12", supported with InvokeModel:
 * https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-compaction.html).
 * Any other flag is refused with 400 "invalid beta flag" (the wording Bedrock sends, as users report
 * it: LiteLLM #20021, claude-code #49370).
 */
export const BEDROCK_BETAS: readonly string[] = [
  'computer-use-2024-10-22', 'computer-use-2025-01-24', 'computer-use-2025-11-24', 'token-efficient-tools-2025-02-19',
  'interleaved-thinking-2025-05-14', 'output-128k-2025-02-19', 'dev-full-thinking-2025-05-14', 'context-1m-2025-08-07',
  'context-management-2025-06-27', 'effort-2025-11-24', 'tool-search-tool-2025-10-19', 'tool-examples-2025-10-29',
  'fine-grained-tool-streaming-2025-05-14', 'compact-2026-01-12',
];

/** The prefixes of cross-region inference profile IDs (Supported Regions and models for inference profiles). */
const PROFILE_PREFIX = /^(?:us|eu|apac|jp|au|ca|us-gov|global)\./;

const malformed = (detail: string) => refuse(400, 'ValidationException', `Malformed input request: ${detail}, please reformat your input and try again.`);

/**
 * Judge an InvokeModel body (also the one CountTokens counts) as Bedrock does; null when accepted.
 * Rules ("Request and Response" page above):
 * - `anthropic_version` is required: `bedrock-2023-05-31`, or a first-party API version (`YYYY-MM-DD` from
 *   2023-06-01), which the official client (@anthropic-ai/bedrock-sdk 1.x, `#adaptRequest` in src/client.ts)
 *   sends from its `anthropic-version` header; anything else "Invalid API version: <value>" (the wording
 *   boto3 users report, boto/boto3#4218);
 * - `max_tokens` and `messages` are required;
 * - the model comes from the path: a body `model` or `stream` is an extraneous key;
 * - `anthropic_beta` holds only flags of {@link BEDROCK_BETAS};
 * - a tool's `eager_input_streaming` is an extraneous key: Bedrock does not offer fine-grained tool
 *   streaming by that field (issue 43; LiteLLM reports the refusal).
 */
export function checkInvokeBody(body: any): BedrockRefusal | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return malformed('#: expected type: JSONObject');
  for (const key of ['model', 'stream']) if (key in body) return malformed(`#: extraneous key [${key}] is not permitted`);
  if (!('anthropic_version' in body)) return malformed('#: required key [anthropic_version] not found');
  const version = body.anthropic_version;
  const firstParty = typeof version === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= '2023-06-01';
  if (version !== 'bedrock-2023-05-31' && !firstParty) return refuse(400, 'ValidationException', `Invalid API version: ${version}`);
  for (const key of ['max_tokens', 'messages']) if (!(key in body)) return malformed(`#: required key [${key}] not found`);
  if (body.anthropic_beta !== undefined) {
    if (!Array.isArray(body.anthropic_beta)) return malformed('#/anthropic_beta: expected type: JSONArray');
    if (body.anthropic_beta.some((beta: unknown) => typeof beta !== 'string' || !BEDROCK_BETAS.includes(beta))) return refuse(400, 'ValidationException', 'invalid beta flag');
  }
  if (Array.isArray(body.tools)) {
    const index = body.tools.findIndex((tool: any) => tool && typeof tool === 'object' && 'eager_input_streaming' in tool);
    if (index >= 0) return malformed(`#/tools/${index}: extraneous key [eager_input_streaming] is not permitted`);
  }
  return null;
}

/**
 * Judge a request to `operation` for `modelId` with body `raw`; null when accepted.
 * - an ID the account cannot invoke: 400 "The provided model identifier is invalid." (InvokeModel "Errors");
 * - CountTokens takes a foundation model's ID; an inference profile's is refused with "The provided
 *   model doesn't support counting tokens." (https://docs.aws.amazon.com/bedrock/latest/userguide/count-tokens.html);
 *   its body is `{"input": {"invokeModel": {"body": <base64 InvokeModel body>}}}`
 *   (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html).
 */
export function checkBedrockBody(operation: string, modelId: string, raw: Buffer, models: string[]): BedrockRefusal | null {
  let body: any;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    return malformed('#: expected type: JSONObject');
  }
  if (operation !== 'count-tokens') {
    if (!models.includes(modelId)) return refuse(400, 'ValidationException', 'The provided model identifier is invalid.');
    return checkInvokeBody(body);
  }
  if (PROFILE_PREFIX.test(modelId) || !models.includes(modelId)) return refuse(400, 'ValidationException', "The provided model doesn't support counting tokens.");
  const encoded = body?.input?.invokeModel?.body;
  if (typeof encoded !== 'string') return refuse(400, 'ValidationException', '1 validation error detected: Value null at \'input\' failed to satisfy constraint: Member must not be null');
  let inner: any;
  try {
    inner = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    return malformed('#: expected type: JSONObject');
  }
  return checkInvokeBody(inner);
}
