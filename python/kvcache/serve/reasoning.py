"""A thinking model's reasoning split from its answer, as `vllm serve --reasoning-parser NAME` splits it. Every
parser known here (PARSERS) reads one form with its own two markers: the reasoning is the text between the
opening marker (`<think>` for most) and the closing one (`</think>`), the answer (content) what follows. Their
templates open the think block in the prompt, so a reply usually begins inside it (only the closing marker in
the output); a reply that writes the opening marker itself first has it dropped.

Where a reply begins (thinking): inside the block, unless the prompt closed it (its last think marker is the
closing one: a template asked not to think writes an empty block, as Qwen3's with enable_thinking false does),
or the parser's template switch (chat_template_kwargs) turns thinking off. A reply with no closing marker is
all reasoning when it began inside the block (it was cut, or never answered), all content otherwise.

One machine (Splitter) reads the text piece by piece for a stream and all at once for a whole reply, so the
streamed pieces join into the whole reply's two parts (docs/serve.md: Reasoning)."""
from collections import namedtuple

from .tool_calls import _held  # how much of a piece's end may begin a marker: the same rule

# open / close: the markers; switch: the chat_template_kwargs key that turns thinking off (None: no key), and
# off(value) whether a value of it does (as the model's template reads it; `default` when the key is absent)
Parser = namedtuple("Parser", "open close switch default off")
_THINK = ("<think>", "</think>")
_ENABLE = ("enable_thinking", True, lambda v: v is False)  # Qwen3's / GLM's templates: `is false`
PARSERS = {  # the --reasoning-parser names (vLLM's)
    "deepseek_r1": Parser(*_THINK, None, None, None),
    "deepseek_v3": Parser(*_THINK, "thinking", False, lambda v: not v),  # DeepSeek V3.1+: off unless asked
    "glm45": Parser(*_THINK, *_ENABLE),
    "minimax_m2": Parser(*_THINK, None, None, None),
    "qwen3": Parser(*_THINK, *_ENABLE),
    "seed_oss": Parser("<seed:think>", "</seed:think>", None, None, None),
}


def thinking(name, prompt, template_kwargs):
    """Whether the reply of a rendered prompt (text) begins inside the think block of parser `name`."""
    p = PARSERS[name]
    if p.switch is not None and p.off(template_kwargs.get(p.switch, p.default)):
        return False
    return prompt.rfind(p.close) <= prompt.rfind(p.open)  # neither: -1 <= -1, inside


class Splitter:
    """Reads one reply's text: feed(piece) gives (reasoning, content) of what is certain so far; finish() the
    rest. A marker split between pieces waits for the piece that completes (or refutes) it."""

    def __init__(self, name, inside):
        self.inside, self.lead, self.held = inside, inside, ""  # lead: nothing but whitespace read yet
        self.open, self.close = PARSERS[name].open, PARSERS[name].close

    def feed(self, text, final=False):
        buf, reasoning, content = self.held + text, "", ""
        self.held = ""
        while buf:
            if not self.inside:
                content, buf = content + buf, ""
            elif self.lead:  # the reply's own opening marker (after whitespace) is dropped
                head = buf.lstrip()
                if head.startswith(self.open):
                    buf, self.lead = head[len(self.open):], False
                elif self.open.startswith(head) and not final:
                    self.held, buf = buf, ""
                else:
                    self.lead = False
            else:
                end = buf.find(self.close)
                if end >= 0:
                    reasoning, buf, self.inside = reasoning + buf[:end], buf[end + len(self.close):], False
                    continue
                keep = 0 if final else _held(buf, self.close)
                reasoning, self.held, buf = reasoning + buf[:len(buf) - keep], buf[len(buf) - keep:], ""
        return reasoning, content

    def finish(self):
        return self.feed("", True)


def split(name, text, inside):
    """(reasoning or None, content or None) of a whole reply read by parser `name`."""
    s = Splitter(name, inside)
    r1, c1 = s.feed(text)
    r2, c2 = s.finish()
    return (r1 + r2) or None, (c1 + c2) or None
