/**
 * Bedrock's streamed reply (InvokeModelWithResponseStream, `application/vnd.amazon.eventstream`) as
 * the first-party API's SSE, as the bytes arrive.
 *
 * The AWS event stream is binary frames (https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html:
 * a 4-byte total length, a 4-byte headers length, a prelude CRC, headers, payload, a message CRC). This
 * module only cuts the byte stream at each frame's declared length; the frame itself (CRCs, headers) is
 * decoded by the AWS SDK's `EventStreamCodec` (@smithy/eventstream-codec). Frames
 * (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html):
 * - `:message-type: event`, `:event-type: chunk`: payload `{"bytes": "<base64 of one native event's JSON>"}`;
 *   the last one's JSON also holds `amazon-bedrock-invocationMetrics` (token counts), removed here;
 * - `:message-type: exception`, `:exception-type: throttlingException` (camel-cased), payload `{"message": ...}`;
 * - `:message-type: error`, headers `:error-code` and `:error-message`.
 * Each native event becomes `event: <type>\ndata: <json>\n\n` (the API's streaming format,
 * https://docs.anthropic.com/en/docs/build-with-claude/streaming); an exception or error frame becomes the
 * API's `event: error` with Bedrock's wording and ends the stream.
 */
import { Transform } from 'node:stream';
import type { EventStreamCodec } from '@smithy/eventstream-codec';
import { nativeTypeOfException, readExceptionName } from './cloud-errors';

/** The longest frame accepted (bytes): the event-stream format's own limit is 16 MiB per message. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** The shortest frame: prelude (8), prelude CRC (4), message CRC (4). */
const MIN_FRAME_BYTES = 16;
const METRICS_FIELD = 'amazon-bedrock-invocationMetrics';

/** Bedrock's invocation metrics (token counts) as the API's usage fields. */
function usageOfMetrics(metrics: any): Record<string, number> {
  const usage: Record<string, number> = {};
  const put = (field: string, value: unknown) => {
    if (typeof value === 'number' && Number.isFinite(value)) usage[field] = value;
  };
  put('input_tokens', metrics?.inputTokenCount);
  put('output_tokens', metrics?.outputTokenCount);
  put('cache_read_input_tokens', metrics?.cacheReadInputTokenCount);
  put('cache_creation_input_tokens', metrics?.cacheWriteInputTokenCount);
  return usage;
}

/** One SSE record of the API's stream. */
function formatRecord(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The API's `error` event with `type` and Bedrock's `message`. */
function formatError(type: string, message: string): string {
  return formatRecord('error', { type: 'error', error: { type, message } });
}

/**
 * A transform from Bedrock's event-stream bytes to the API's SSE bytes. It keeps backpressure (a
 * Transform: the reply is read no faster than its reader takes the SSE) and holds at most one frame.
 *
 * Usage: a `message_delta` without its output count, or after a `message_start` without its input count
 * (the first-party API always sends both; Bedrock may not), is held until the next frame, whose
 * `amazon-bedrock-invocationMetrics` then fill the missing fields of its `usage`; every other event leaves
 * as soon as its frame is whole.
 * @param codec the AWS SDK's event-stream codec (new per stream: it keeps no state between frames here)
 */
export function createEventStreamToSse(codec: EventStreamCodec): Transform {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let finished = false;
  let heldDelta: any;
  let metricsUsage: Record<string, number> | undefined;

  let startHadInput = false;

  const releaseDelta = (out: string[]) => {
    if (heldDelta === undefined) return;
    // The metrics fill only the fields the events lacked: the events' own counts stand.
    if (metricsUsage && Object.keys(metricsUsage).length > 0) heldDelta.usage = { ...metricsUsage, ...heldDelta.usage };
    out.push(formatRecord('message_delta', heldDelta));
    heldDelta = undefined;
  };

  /** The SSE of one whole frame. */
  const convertFrame = (frame: Uint8Array, out: string[]) => {
    const { headers, body } = codec.decode(frame);
    const messageType = headers[':message-type']?.value;
    if (messageType === 'exception' || messageType === 'error') {
      releaseDelta(out);
      const name = readExceptionName(String(headers[':exception-type']?.value ?? headers[':error-code']?.value ?? ''));
      let message = typeof headers[':error-message']?.value === 'string' ? String(headers[':error-message'].value) : undefined;
      try {
        const parsed = JSON.parse(Buffer.from(body).toString('utf8'));
        if (typeof parsed?.message === 'string') message = parsed.message;
      } catch {
        // an error frame's payload may be empty: its headers carry the message
      }
      const type = nativeTypeOfException(name);
      out.push(formatError(type, message ?? `Bedrock ended the stream with ${name ?? 'an error'}`));
      finished = true;
      return;
    }
    if (headers[':event-type']?.value !== 'chunk') return;
    const payload = JSON.parse(Buffer.from(body).toString('utf8'));
    if (typeof payload?.bytes !== 'string') return;
    const event = JSON.parse(Buffer.from(payload.bytes, 'base64').toString('utf8'));
    if (event !== null && typeof event === 'object' && METRICS_FIELD in event) {
      metricsUsage = usageOfMetrics(event[METRICS_FIELD]);
      delete event[METRICS_FIELD];
    }
    releaseDelta(out);
    if (typeof event?.type !== 'string') return;
    if (event.type === 'message_start') startHadInput = typeof event.message?.usage?.input_tokens === 'number';
    const lacksUsage = event.type === 'message_delta' && (typeof event.usage?.output_tokens !== 'number' || !startHadInput);
    if (lacksUsage) heldDelta = event;
    else out.push(formatRecord(event.type, event));
  };

  /** Cut whole frames off `pending` and convert them; the rest waits for more bytes. */
  const drainFrames = (out: string[]) => {
    while (!finished && pendingBytes >= 4) {
      let head = pending[0];
      if (head.length < 4) {
        head = Buffer.concat(pending, pendingBytes);
        pending = [head];
      }
      const length = head.readUInt32BE(0);
      if (length < MIN_FRAME_BYTES || length > MAX_FRAME_BYTES) throw new Error(`a Bedrock event-stream frame declares ${length} bytes`);
      if (pendingBytes < length) return;
      const all = pending.length === 1 ? head : Buffer.concat(pending, pendingBytes);
      convertFrame(all.subarray(0, length), out);
      const rest = all.subarray(length);
      pending = rest.length > 0 ? [rest] : [];
      pendingBytes = rest.length;
    }
  };

  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (finished) return callback();
      pending.push(chunk);
      pendingBytes += chunk.length;
      const out: string[] = [];
      try {
        drainFrames(out);
      } catch (err) {
        releaseDelta(out);
        out.push(formatError('api_error', `the Bedrock event stream could not be read: ${(err as Error).message}`));
        finished = true;
      }
      callback(null, out.length > 0 ? out.join('') : undefined);
    },
    flush(callback) {
      const out: string[] = [];
      releaseDelta(out);
      // Bytes left over are a frame cut short: the stream must not end as if it were complete.
      if (!finished && pendingBytes > 0) out.push(formatError('api_error', `the Bedrock event stream ended inside a frame (${pendingBytes} bytes)`));
      callback(null, out.length > 0 ? out.join('') : undefined);
    },
  });
}
