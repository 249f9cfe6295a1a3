/**
 * Body validation with ajv, one schema per route, compiled once when the pipeline is built.
 * Failures are 400 with a message that names the field (and `param` in the chat shape).
 */
import type { RequestHandler } from 'express';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { errors } from '../lib/http/errors';

const ajv = new Ajv({ allErrors: false, strict: false });

/** Field path of an ajv error, e.g. `messages[0].content`. */
function fieldOf(error: ErrorObject): string {
  const parts = error.instancePath.split('/').slice(1);
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty));
  return parts.map((part, i) => (/^\d+$/.test(part) ? `[${part}]` : i === 0 ? part : `.${part}`)).join('') || '(body)';
}

/** One readable sentence for an ajv error. */
export function describeValidationError(error: ErrorObject): { message: string; param: string } {
  const field = fieldOf(error);
  if (error.keyword === 'required') return { message: `${field}: field required`, param: field };
  if (error.keyword === 'enum') {
    return { message: `${field}: must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, param: field };
  }
  if (field === '(body)' && error.keyword === 'type') return { message: 'request body must be a JSON object', param: field };
  return { message: `${field}: ${error.message ?? 'is invalid'}`, param: field };
}

/**
 * Compile a schema once into a check of a parsed body.
 * @throws GatewayError 400 `invalid_request_error` naming the first bad field (`param` in the chat shape)
 */
export function createBodyCheck(schema: object): (body: unknown) => void {
  const validate: ValidateFunction = ajv.compile(schema);
  return (body) => {
    if (validate(body)) return;
    const { message, param } = describeValidationError(validate.errors![0]);
    throw errors.invalidRequest(message, param);
  };
}

/** Compile a schema once; the validator rejects with 400 naming the first bad field. */
export function createValidateBody(schema: object): RequestHandler {
  const check = createBodyCheck(schema);
  return (req, _res, next) => {
    try {
      check(req.body);
      next();
    } catch (err) {
      next(err);
    }
  };
}

const contentSchema = { type: ['string', 'array'], items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } };

/**
 * `POST /v1/messages`: only what the gateway itself reads (the model for the whitelist and billing,
 * `max_tokens` and the body's size for the credit reservation, `stream` for the reply's path). Every
 * other field, role, content block type and beta goes upstream unchanged and the upstream judges it:
 * the native API grows with each beta, and a frozen copy of it here would lock clients out of each new
 * feature (for example Claude Code's `system` messages under its mid-conversation-system beta).
 */
export const messagesSchema = {
  type: 'object',
  required: ['model', 'messages', 'max_tokens'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    max_tokens: { type: 'integer', minimum: 1 },
    messages: { type: 'array' },
    stream: { type: 'boolean' },
  },
};

/** `POST /v1/messages/count_tokens`: the model and the messages array; nothing else is read. */
export const countTokensSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: messagesSchema.properties.model,
    messages: messagesSchema.properties.messages,
  },
};

/**
 * A native body that reverse translation (native client, chat-completions upstream) converts: stricter
 * than `messagesSchema`, since the translator reads every message. Roles `system` (Claude Code's
 * mid-conversation system beta) become chat `system` messages; unknown block types are dropped with a
 * warning by the translator, unknown fields ignored.
 */
export const nativeTranslationSchema = {
  ...messagesSchema,
  properties: {
    ...messagesSchema.properties,
    messages: {
      type: 'array',
      items: { type: 'object', required: ['role', 'content'], properties: { role: { enum: ['user', 'assistant', 'system'] }, content: contentSchema } },
    },
    system: contentSchema,
    stop_sequences: { type: 'array', items: { type: 'string' } },
    temperature: { type: 'number' },
    top_p: { type: 'number' },
    metadata: { type: 'object' },
    tools: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
    tool_choice: { type: 'object' },
  },
};

/** `tool_choice` of the OpenAI formats (chat-completions, Responses): a mode, or an object with a `type`. */
const openAiToolChoiceSchema = {
  type: ['string', 'object', 'null'],
  if: { type: 'string' },
  then: { enum: ['none', 'auto', 'required'] },
  else: { required: ['type'], properties: { type: { type: 'string' } } },
};

/** A chat content part: a `type`, and for text and image parts the field that carries them. */
const chatContentPartSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string' } },
  allOf: [
    { if: { properties: { type: { const: 'text' } } }, then: { required: ['text'], properties: { text: { type: 'string' } } } },
    {
      if: { properties: { type: { const: 'image_url' } } },
      then: { required: ['image_url'], properties: { image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } } } },
    },
  ],
};

const chatToolCallSchema = {
  type: 'object',
  required: ['id', 'function'],
  properties: {
    id: { type: 'string', minLength: 1 },
    type: { type: 'string' },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'string' } } },
  },
};

const chatToolSchema = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 128 },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: { type: ['boolean', 'null'] },
      },
    },
  },
};

/** Most choices (`n`) a chat-completions request may ask for (the translator takes only 1). */
export const MAX_CHOICES = 8;

/**
 * `POST /v1/chat/completions` (wire-formats.md §5). Only the fields the translator reads are checked
 * (types and ranges); unlisted fields are accepted and ignored (compatibility rule 2). Semantic checks
 * (`n` > 1, parts the native format cannot take, tool-call arguments) live in the translator.
 */
export const chatCompletionsSchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool', 'function'] },
          content: { type: ['string', 'array', 'null'], items: chatContentPartSchema },
          name: { type: 'string' },
          tool_calls: { type: ['array', 'null'], items: chatToolCallSchema },
          tool_call_id: { type: 'string' },
          function_call: { type: ['object', 'null'], required: ['name', 'arguments'], properties: { name: { type: 'string' }, arguments: { type: 'string' } } },
        },
        allOf: [{ if: { properties: { role: { const: 'tool' } } }, then: { required: ['tool_call_id'] } }],
      },
    },
    stream: { type: ['boolean', 'null'] },
    max_tokens: { type: ['integer', 'null'], minimum: 1 },
    max_completion_tokens: { type: ['integer', 'null'], minimum: 1 },
    temperature: { type: ['number', 'null'] },
    top_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    top_k: { type: ['integer', 'null'], minimum: 0 },
    reasoning_effort: { type: ['string', 'null'] },
    // A pass-through key group's upstream makes n replies, each held for (middleware/credit-reservation.ts).
    n: { type: ['integer', 'null'], minimum: 1, maximum: MAX_CHOICES },
    stop: { type: ['string', 'array', 'null'], items: { type: 'string' } },
    stream_options: { type: ['object', 'null'], properties: { include_usage: { type: 'boolean' } } },
    user: { type: 'string' },
    tools: { type: ['array', 'null'], items: chatToolSchema },
    tool_choice: openAiToolChoiceSchema,
    parallel_tool_calls: { type: ['boolean', 'null'] },
    response_format: {
      type: ['object', 'null'],
      required: ['type'],
      properties: {
        type: { enum: ['text', 'json_object', 'json_schema'] },
        json_schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, description: { type: 'string' }, schema: { type: 'object' } } },
      },
      allOf: [{ if: { properties: { type: { const: 'json_schema' } } }, then: { required: ['json_schema'] } }],
    },
  },
};

/** Input item types the Responses translator reads (a `message` may leave `type` out). */
export const RESPONSES_ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output', 'local_shell_call', 'local_shell_call_output', 'reasoning', 'web_search_call'];

/**
 * `POST /v1/responses` (openai-node `ResponseCreateParams`): the fields the translator reads, by
 * type; unlisted fields are accepted and ignored. Item types the gateway cannot read are refused here,
 * before any credit is held; what is inside items (parts, call arguments) is checked by the translator.
 */
export const responsesSchema = {
  type: 'object',
  required: ['model'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    input: {
      type: ['string', 'array'],
      items: {
        type: 'object',
        properties: { type: { enum: RESPONSES_ITEM_TYPES }, role: { type: 'string' } },
        anyOf: [{ required: ['type'] }, { required: ['role'] }],
      },
    },
    instructions: { type: ['string', 'null'] },
    max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
    temperature: { type: ['number', 'null'] },
    top_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    tools: { type: ['array', 'null'], items: { type: 'object', required: ['type'], properties: { type: { type: 'string' }, name: { type: 'string' } } } },
    tool_choice: openAiToolChoiceSchema,
    parallel_tool_calls: { type: ['boolean', 'null'] },
    reasoning: { type: ['object', 'null'], properties: { effort: { type: ['string', 'null'] } } },
    text: {
      type: ['object', 'null'],
      properties: { format: { type: 'object', required: ['type'], properties: { type: { enum: ['text', 'json_object', 'json_schema'] }, schema: { type: 'object' } } } },
    },
    include: { type: ['array', 'null'], items: { type: 'string' } },
    store: { type: ['boolean', 'null'] },
    stream: { type: ['boolean', 'null'] },
    previous_response_id: { type: ['string', 'null'], minLength: 1 },
    metadata: { type: ['object', 'null'] },
    user: { type: 'string' },
    safety_identifier: { type: 'string' },
  },
};
