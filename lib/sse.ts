/**
 * Server-sent events: the one place outgoing records are formatted, and the parser of incoming
 * streams (eventsource-parser, which holds for any split of the byte stream).
 */
import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';

import type { SseEvent } from '../translators/native-types';

export type { SseEvent };

/**
 * Format one outgoing SSE record. With `event`, an `event:` line precedes the data (native streams);
 * without, a bare `data:` record (chat-completions streams). `data` is JSON-encoded unless a string.
 */
export function formatSse(data: unknown, event?: string): string {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return event === undefined ? `data: ${text}\n\n` : `event: ${event}\ndata: ${text}\n\n`;
}

/**
 * A byte-stream SSE parser: `write(chunk)` as bytes arrive (any split, including inside a multi-byte
 * UTF-8 character); `onEvent` is called synchronously for each complete event.
 */
export function createSseDecoder(onEvent: (event: SseEvent) => void): { write(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  const parser = createParser({
    onEvent(message: EventSourceMessage) {
      onEvent({ event: message.event, data: message.data });
    },
  });
  return {
    write(chunk) {
      parser.feed(decoder.write(chunk));
    },
    end() {
      const rest = decoder.end();
      if (rest) parser.feed(rest);
    },
  };
}
