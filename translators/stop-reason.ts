/**
 * Native stop reason -> chat finish reason (wire-formats.md §8.4).
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

const FINISH_REASONS: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/**
 * The finish reason for a stop reason; unknown or null values map to `stop` and are reported
 * through `onUnknown` (so the caller can log each new value once).
 */
export function mapStopReason(stopReason: string | null | undefined, onUnknown?: (value: string) => void): FinishReason {
  if (stopReason && Object.prototype.hasOwnProperty.call(FINISH_REASONS, stopReason)) return FINISH_REASONS[stopReason];
  if (stopReason && onUnknown) onUnknown(stopReason);
  return 'stop';
}
