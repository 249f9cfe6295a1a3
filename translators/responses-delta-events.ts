/**
 * The delta events of a streamed Responses reply, most of its events (openai-node `responses.ts`:
 * ResponseTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent, ResponseFunctionCallArgumentsDeltaEvent,
 * ResponseCustomToolCallInputDeltaEvent), and their JSON written from a plain string template
 * ({@link writeResponsesDeltaEvent}, the bytes `JSON.stringify` writes for the event: a property test
 * checks it). An event is written as it is when written. Pure; no I/O.
 */
import type { ResponsesStreamEvent } from './responses-types';

export type ResponsesDeltaType =
  | 'response.output_text.delta'
  | 'response.reasoning_summary_text.delta'
  | 'response.function_call_arguments.delta'
  | 'response.custom_tool_call_input.delta';

/**
 * A delta event, its members in the order the API writes them: `type`, `sequence_number`, `item_id`,
 * `output_index`, the index of its part (always 0 here: one output_text part, one summary), `delta`,
 * and the text delta's empty `logprobs`. The members are declared, not defined, so that they are made
 * in this order by the constructor (a class field would be made first).
 */
export class ResponsesDeltaEvent implements ResponsesStreamEvent {
  /** The type every stream event has (responses-types.ts); an event has only the members below. */
  [field: string]: unknown;
  declare readonly type: ResponsesDeltaType;
  declare readonly sequence_number: number;
  declare readonly item_id: string;
  declare readonly output_index: number;
  /** output_text.delta only. */
  declare readonly content_index?: 0;
  /** reasoning_summary_text.delta only. */
  declare readonly summary_index?: 0;
  declare readonly delta: string;
  /** output_text.delta only. */
  declare readonly logprobs?: [];

  constructor(type: ResponsesDeltaType, sequence: number, itemId: string, outputIndex: number, delta: string) {
    this.type = type;
    this.sequence_number = sequence;
    this.item_id = itemId;
    this.output_index = outputIndex;
    if (type === 'response.output_text.delta') this.content_index = 0;
    if (type === 'response.reasoning_summary_text.delta') this.summary_index = 0;
    this.delta = delta;
    if (type === 'response.output_text.delta') this.logprobs = [];
  }

  /** The event's JSON, byte for byte what `JSON.stringify(this)` gives. */
  json(): string {
    return writeResponsesDeltaEvent(this);
  }
}

/** A delta event's JSON from its type's template: the bytes `JSON.stringify` writes for it. */
export function writeResponsesDeltaEvent(event: ResponsesDeltaEvent): string {
  const { sequence_number: sequence, output_index: outputIndex } = event;
  const itemId = JSON.stringify(event.item_id);
  const delta = JSON.stringify(event.delta);
  switch (event.type) {
    case 'response.output_text.delta':
      return `{"type":"response.output_text.delta","sequence_number":${sequence},"item_id":${itemId},"output_index":${outputIndex},"content_index":0,"delta":${delta},"logprobs":[]}`;
    case 'response.reasoning_summary_text.delta':
      return `{"type":"response.reasoning_summary_text.delta","sequence_number":${sequence},"item_id":${itemId},"output_index":${outputIndex},"summary_index":0,"delta":${delta}}`;
    default:
      return `{"type":"${event.type}","sequence_number":${sequence},"item_id":${itemId},"output_index":${outputIndex},"delta":${delta}}`;
  }
}
