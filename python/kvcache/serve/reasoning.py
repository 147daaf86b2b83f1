"""A thinking model's reasoning split from its answer, as `vllm serve --reasoning-parser NAME` splits it. The
parsers known here (PARSERS) all read one form: the reasoning is the text between `<think>` and `</think>`,
the answer (content) what follows. Their templates open the think block in the prompt, so a reply usually
begins inside it (only `</think>` in the output); a reply that writes `<think>` itself first has it dropped.

Where a reply begins (thinking): inside the block, unless the prompt closed it (its last think marker is
`</think>`: a template asked not to think writes an empty block, as Qwen3's with enable_thinking false does),
or (qwen3) chat_template_kwargs has enable_thinking false. A reply with no `</think>` is all reasoning when it
began inside the block (it was cut, or never answered), all content otherwise.

One machine (Splitter) reads the text piece by piece for a stream and all at once for a whole reply, so the
streamed pieces join into the whole reply's two parts (docs/serve.md: Reasoning)."""
from .tool_calls import _held  # how much of a piece's end may begin a marker: the same rule

OPEN, CLOSE = "<think>", "</think>"
PARSERS = ("deepseek_r1", "qwen3")  # the --reasoning-parser names


def thinking(name, prompt, template_kwargs):
    """Whether the reply of a rendered prompt (text) begins inside the think block."""
    if name == "qwen3" and template_kwargs.get("enable_thinking", True) is False:
        return False
    return prompt.rfind(CLOSE) <= prompt.rfind(OPEN)  # neither: -1 <= -1, inside


class Splitter:
    """Reads one reply's text: feed(piece) gives (reasoning, content) of what is certain so far; finish() the
    rest. A marker split between pieces waits for the piece that completes (or refutes) it."""

    def __init__(self, inside):
        self.inside, self.lead, self.held = inside, inside, ""  # lead: nothing but whitespace read yet

    def feed(self, text, final=False):
        buf, reasoning, content = self.held + text, "", ""
        self.held = ""
        while buf:
            if not self.inside:
                content, buf = content + buf, ""
            elif self.lead:  # the reply's own opening <think> (after whitespace) is dropped
                head = buf.lstrip()
                if head.startswith(OPEN):
                    buf, self.lead = head[len(OPEN):], False
                elif OPEN.startswith(head) and not final:
                    self.held, buf = buf, ""
                else:
                    self.lead = False
            else:
                end = buf.find(CLOSE)
                if end >= 0:
                    reasoning, buf, self.inside = reasoning + buf[:end], buf[end + len(CLOSE):], False
                    continue
                keep = 0 if final else _held(buf, CLOSE)
                reasoning, self.held, buf = reasoning + buf[:len(buf) - keep], buf[len(buf) - keep:], ""
        return reasoning, content

    def finish(self):
        return self.feed("", True)


def split(text, inside):
    """(reasoning or None, content or None) of a whole reply."""
    s = Splitter(inside)
    r1, c1 = s.feed(text)
    r2, c2 = s.finish()
    return (r1 + r2) or None, (c1 + c2) or None
