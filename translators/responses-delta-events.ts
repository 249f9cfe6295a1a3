/**
 * The delta events of a streamed Responses reply, most of its events (openai-node `responses.ts`:
 * ResponseTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent, ResponseFunctionCallArgumentsDeltaEvent,
 * ResponseCustomToolCallInputDeltaEvent), as objects that also write their own JSON.
 *
 * Kept for speed (bench/RESULTS.md, "Mechanisms kept for speed"): `json()` writes the bytes
 * `JSON.stringify` writes for the event (the members in the order they are made, a test checks it),
 * without walking it. An event is never changed once made. Pure; no I/O.
 */
import type { ResponsesStreamEvent } from './responses-types';

/** A delta event: its members as JSON.stringify sees them, and its own JSON text. */
export abstract class ResponsesDeltaEvent implements ResponsesStreamEvent {
  [field: string]: unknown;
  abstract readonly type: string;
  abstract readonly sequence_number: number;
  /** The event's JSON, byte for byte what `JSON.stringify(this)` gives. */
  abstract json(): string;
}

/** `response.output_text.delta`: text of a message's output_text part (content_index 0, no logprobs). */
export class OutputTextDeltaEvent extends ResponsesDeltaEvent {
  readonly type = 'response.output_text.delta';
  readonly sequence_number: number;
  readonly item_id: string;
  readonly output_index: number;
  readonly content_index = 0;
  readonly delta: string;
  readonly logprobs: never[] = [];

  constructor(sequence: number, itemId: string, outputIndex: number, delta: string) {
    super();
    this.sequence_number = sequence;
    this.item_id = itemId;
    this.output_index = outputIndex;
    this.delta = delta;
  }

  json(): string {
    return `{"type":"response.output_text.delta","sequence_number":${this.sequence_number},"item_id":${JSON.stringify(this.item_id)},"output_index":${this.output_index},"content_index":0,"delta":${JSON.stringify(this.delta)},"logprobs":[]}`;
  }
}

/** `response.reasoning_summary_text.delta`: text of a reasoning item's summary (summary_index 0). */
export class ReasoningSummaryDeltaEvent extends ResponsesDeltaEvent {
  readonly type = 'response.reasoning_summary_text.delta';
  readonly sequence_number: number;
  readonly item_id: string;
  readonly output_index: number;
  readonly summary_index = 0;
  readonly delta: string;

  constructor(sequence: number, itemId: string, outputIndex: number, delta: string) {
    super();
    this.sequence_number = sequence;
    this.item_id = itemId;
    this.output_index = outputIndex;
    this.delta = delta;
  }

  json(): string {
    return `{"type":"response.reasoning_summary_text.delta","sequence_number":${this.sequence_number},"item_id":${JSON.stringify(this.item_id)},"output_index":${this.output_index},"summary_index":0,"delta":${JSON.stringify(this.delta)}}`;
  }
}

/** `response.function_call_arguments.delta` or `response.custom_tool_call_input.delta`: a tool call's input as it streams. */
export class ToolInputDeltaEvent extends ResponsesDeltaEvent {
  readonly type: 'response.function_call_arguments.delta' | 'response.custom_tool_call_input.delta';
  readonly sequence_number: number;
  readonly item_id: string;
  readonly output_index: number;
  readonly delta: string;

  constructor(type: ToolInputDeltaEvent['type'], sequence: number, itemId: string, outputIndex: number, delta: string) {
    super();
    this.type = type;
    this.sequence_number = sequence;
    this.item_id = itemId;
    this.output_index = outputIndex;
    this.delta = delta;
  }

  json(): string {
    return `{"type":"${this.type}","sequence_number":${this.sequence_number},"item_id":${JSON.stringify(this.item_id)},"output_index":${this.output_index},"delta":${JSON.stringify(this.delta)}}`;
  }
}
