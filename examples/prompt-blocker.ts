/**
 * Example: refuse requests whose prompt matches a pattern, with a proper error in the route's own
 * format (native `{"type":"error",...}` on /v1/messages, chat `{"error":{...}}` on
 * /v1/chat/completions and /v1/responses) and before anything is sent upstream or billed.
 *
 *   const gateway = await createGateway({ hooks: createPromptBlocker({ patterns: [/\bpassword\b/i] }) });
 *
 * Run it: `node dist/examples/prompt-blocker.js` (a gateway on PORT, default 8080).
 */
import { createGateway, GatewayError, type GatewayHooks } from '../lib';

export interface PromptBlockerOptions {
  /** A request whose prompt text matches any of these is refused. */
  patterns: RegExp[];
  /** Error message shown to the client. Default: a generic policy message (the pattern is not revealed). */
  message?: string;
}

/**
 * Every text of a request body, in any of the gateway's formats: `system` (string or text blocks),
 * message contents (strings, text blocks or text parts) and tool results; for the Responses format,
 * `instructions` and the `input` items' contents and tool outputs. Other fields are not prompt text.
 */
export function collectPromptText(body: unknown): string[] {
  const texts: string[] = [];
  const visit = (content: unknown) => {
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        if (part && typeof part === 'object') {
          if (typeof part.text === 'string') texts.push(part.text);
          if (part.type === 'tool_result') visit(part.content);
        }
      }
    }
  };
  const b = body as { system?: unknown; messages?: Array<{ content?: unknown }> } | undefined;
  visit(b?.system);
  for (const message of b?.messages ?? []) visit(message?.content);
  // The Responses format: `instructions`, and `input` (a string, or items whose content or tool
  // output carries text).
  const r = body as { instructions?: unknown; input?: unknown } | undefined;
  visit(r?.instructions);
  if (typeof r?.input === 'string') visit(r.input);
  else if (Array.isArray(r?.input)) {
    for (const item of r.input as Array<{ content?: unknown; output?: unknown }>) {
      visit(item?.content);
      visit(item?.output);
    }
  }
  return texts;
}

/** `pattern.test`, from the start of the text even for a /g or /y pattern (they remember lastIndex). */
function matches(pattern: RegExp, text: string): boolean {
  pattern.lastIndex = 0;
  return pattern.test(text);
}

/** Hooks: `beforeUpstream` checks the validated body and throws a 400 GatewayError on a match. */
export function createPromptBlocker(options: PromptBlockerOptions): GatewayHooks {
  const message = options.message ?? 'this request was blocked by the content policy of this gateway';
  return {
    beforeUpstream(ctx, req) {
      const texts = collectPromptText(req.body);
      const hit = options.patterns.some((pattern) => texts.some((text) => matches(pattern, text)));
      if (!hit) return;
      ctx.setTag('blocked', 'prompt-pattern');
      throw new GatewayError(400, 'invalid_request_error', message, { chatCode: 'content_policy_violation', param: 'messages' });
    },
  };
}

if (require.main === module) {
  void (async () => {
    const gateway = await createGateway({ developmentKey: true, hooks: createPromptBlocker({ patterns: [/\b(password|secret key)\b/i] }) });
    if (gateway.developmentKey) console.error(`development key: ${gateway.developmentKey}`);
    gateway.app.listen(gateway.config.port);
  })();
}
