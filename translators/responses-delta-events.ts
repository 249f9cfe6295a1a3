/**
 * The delta events of a streamed Responses reply, most of its events (openai-node `responses.ts`:
 * ResponseTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent, ResponseFunctionCallArgumentsDeltaEvent,
 * ResponseCustomToolCallInputDeltaEvent), as objects that also write their own JSON.
 *
 * Kept for speed (bench/RESULTS.md, "Mechanisms kept for speed"): `json()` writes the bytes
 * `JSON.stringify` writes for the event (its members in the order they are made, a test checks it),
 * without walking it. An event is never changed once made. Pure; no I/O.
 */
import type { ResponsesStreamEvent } from './responses-types';

export type ResponsesDeltaType =
  | 'response.output_text.delta'
  | 'response.reasoning_summary_text.delta'
  | 'response.function_call_arguments.delta'
  | 'response.custom_tool_call_input.delta';

/**
 * What each delta type has beyond `type`, `sequence_number`, `item_id`, `output_index` and `delta`:
 * the index of its part (always 0 here: one output_text part, one summary), between `output_index` and
 * `delta`, and the text delta's empty `logprobs` after it.
 */
const SHAPES: Record<ResponsesDeltaType, { part?: 'content_index' | 'summary_index'; logprobs?: true }> = {
  'response.output_text.delta': { part: 'content_index', logprobs: true },
  'response.reasoning_summary_text.delta': { part: 'summary_index' },
  'response.function_call_arguments.delta': {},
  'response.custom_tool_call_input.delta': {},
};

/** A delta event: its members as JSON.stringify sees them, and its own JSON text. */
export class ResponsesDeltaEvent implements ResponsesStreamEvent {
  [field: string]: unknown;
  declare readonly type: ResponsesDeltaType;
  declare readonly sequence_number: number;
  declare readonly item_id: string;
  declare readonly output_index: number;
  declare readonly delta: string;

  constructor(type: ResponsesDeltaType, sequence: number, itemId: string, outputIndex: number, delta: string) {
    const { part, logprobs } = SHAPES[type];
    this.type = type;
    this.sequence_number = sequence;
    this.item_id = itemId;
    this.output_index = outputIndex;
    if (part) this[part] = 0;
    this.delta = delta;
    if (logprobs) this.logprobs = [];
  }

  /** The event's JSON, byte for byte what `JSON.stringify(this)` gives. */
  json(): string {
    const { part, logprobs } = SHAPES[this.type];
    return `{"type":"${this.type}","sequence_number":${this.sequence_number},"item_id":${JSON.stringify(this.item_id)},"output_index":${this.output_index}${part ? `,"${part}":0` : ''},"delta":${JSON.stringify(this.delta)}${logprobs ? ',"logprobs":[]' : ''}}`;
  }
}
