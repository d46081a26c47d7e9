"""Protocol translation between Chat Completions, Anthropic Messages and OpenAI Responses.

Pure data in, pure data out (stdlib only, no I/O), so every table is testable on its own.

One neutral shape sits in the middle, so three client protocols and two upstream protocols
need 3 + 2 adapters instead of 3 × 2 translators:

- a request is parsed into a `prompt.Prompt` (`prompt_from_*`) and rendered for the upstream
  (`anthropic.messages_request`, `responses.responses_request`);
- an upstream stream is read into neutral `events` (`anthropic.AnthropicReader`,
  `responses.ResponsesReader`), which a renderer turns into the client's stream
  (`chat.ChatRenderer`, `anthropic.AnthropicRenderer`, `responses.ResponsesRenderer`) or a
  `events.Transcript` folds into one non-streaming answer.

The readers also serve the untranslated pass-through: `events.Tally` watches their events for
the request record (usage, first output, how the stream ended) whatever the route.

What cannot cross: Anthropic thinking signatures and Responses encrypted reasoning are opaque
to the other side. They ride along tagged with their origin (`events.tag_signature`) so a
client that sends them back gets them to the upstream that made them; foreign ones are dropped.
"""
