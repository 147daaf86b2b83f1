"""Generated ids to text, a step at a time: deltas that never end in half a
UTF-8 character, and stop strings that end the text (never streamed in part)."""
import codecs

_CONTEXT = 5  # prompt tokens decoded before the output, so the first token's leading space is kept
_TAIL = 16  # prompt tokens looked at for an unfinished character


def _unfinished(data):
    """Whether data end inside a UTF-8 character (bytes that can never be UTF-8 end nothing)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    decoder.decode(data, final=False)
    return bool(decoder.getstate()[0])


def open_tail(tokenizer, ids):
    """How many of ids' last tokens to hold so that the ones before end on a character boundary (0: ids end
    on one). Given as token ids, a prompt can end inside a character: those tokens' text belongs with the
    output that completes it. A held token can itself finish an earlier character, which is then held too;
    at most _TAIL tokens are."""
    pieces = [tokenizer.token_bytes(t) for t in ids[-_TAIL:]]
    held = 0
    while held < len(pieces) and _unfinished(b"".join(pieces[:len(pieces) - held])):
        held += 1
    return held


def prompt_text(tokenizer, ids):
    """The text of prompt ids that a TextStream's output goes on from: all but an unfinished character's
    tokens (open_tail), whose text comes with the output."""
    return tokenizer.decode(ids[:len(ids) - open_tail(tokenizer, ids)])


class TextStream:
    """The text of one request's output, fed the ids of each step.

    add(ids) returns the text that is now certain: a token whose bytes end
    inside a UTF-8 character (decoded as U+FFFD) waits for the next one
    (bytes that can never be UTF-8 come out as U+FFFD, as decode gives them); the
    last len(longest stop string) - 1 characters wait too, since a stop
    string may be starting there. finish() returns the rest. When a stop
    string appears, the text ends before it (after it with keep_stop),
    `stopped` is set, and later ids are ignored. Stop strings are looked for
    from the min_tokens-th token on (as vLLM: one that ended before stays in
    the text). The deltas of add and finish concatenate to `text`.

    Prompt ids that end inside a character (open_tail) lend their last
    tokens to the output: the text begins with theirs, the character whole
    once the output completes it (U+FFFD if it never does), so
    prompt_text(prompt) + text is the decode of prompt and output together.
    `lent` holds those tokens' bytes."""

    def __init__(self, tokenizer, prompt_ids, stop=(), skip_special_tokens=True, keep_stop=False, min_tokens=0):
        self._tok = tokenizer
        self._skip = skip_special_tokens
        held = open_tail(tokenizer, prompt_ids)
        self.lent = b"".join(tokenizer.token_bytes(t) for t in prompt_ids[len(prompt_ids) - held:])
        self._ids = list(prompt_ids[-(_CONTEXT + held):])
        self._prefix = 0  # self._ids[_prefix:_read] decodes to the text before the pending part
        self._read = len(self._ids) - held
        self._taken = 0  # characters of the pending tokens' text already in self.text
        self._stop = tuple(s for s in stop if s)
        self._hold = max((len(s) for s in self._stop), default=1) - 1
        self._keep_stop = keep_stop
        self._wait = min_tokens  # tokens still to come before a stop string counts
        self.text = ""  # the whole output text so far (stop string cut)
        self._sent = 0  # characters of text already returned
        self.stopped = None  # the stop string that ended the text

    def _decode(self, ids):
        return self._tok.decode(ids, skip_special_tokens=self._skip)

    def _consume(self, ids):
        """Appends the certain text of ids to self.text; False once a stop string ended it.

        The text of the pending tokens (after self._read) is certain but for
        a last U+FFFD: a lossy UTF-8 decoder gives one for invalid bytes,
        which stay invalid, and one for an incomplete character at the end,
        which the next token may complete. So all of it but that last U+FFFD
        is taken at once (self._taken characters of it so far)."""
        for t in ids:
            self._ids.append(t)
            before = self._decode(self._ids[self._prefix:self._read])
            pending = self._decode(self._ids[self._prefix:])[len(before):]
            complete = not pending.endswith("\ufffd")
            certain = pending if complete else pending[:-1]
            start = max(0, len(self.text) - self._hold)
            self.text += certain[self._taken:]
            self._taken = max(self._taken, len(certain))
            if complete:
                self._prefix, self._read, self._taken = self._read, len(self._ids), 0
            self._wait -= 1
            if self._wait <= 0 and self._cut_at_stop(start):
                return False
        return True

    def _cut_at_stop(self, start):
        hits = [(i, s) for s in self._stop for i in [self.text.find(s, start)] if i >= 0]
        if not hits:
            return False
        i, s = min(hits)
        self.text, self.stopped = self.text[:i + len(s) if self._keep_stop else i], s
        return True

    def _take(self, upto):
        upto = max(upto, self._sent)
        delta, self._sent = self.text[self._sent:upto], upto
        return delta

    def add(self, ids):
        if self.stopped is not None:
            return ""
        if not self._consume(ids):
            return self._take(len(self.text))
        return self._take(len(self.text) - self._hold)

    def finish(self):
        """The text still held back, incomplete characters included (as U+FFFD)."""
        if self.stopped is None:
            pending = self._decode(self._ids[self._prefix:])[len(self._decode(self._ids[self._prefix:self._read])):]
            tail = pending[self._taken:]
            start = max(0, len(self.text) - self._hold)
            self.text += tail
            if self._wait <= 0:
                self._cut_at_stop(start)
        return self._take(len(self.text))


class TextPlace:
    """A character offset in a text that tokens' bytes extend: advance(bytes) returns the offset where they
    begin (a token that continues a character is at that character's) and moves past their whole characters."""

    def __init__(self, offset, lead=b""):
        """lead: bytes the text begins with before the tokens' (TextStream.lent), the offset moved past them."""
        self.offset = offset
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self.offset += len(self._utf8.decode(lead))

    def advance(self, data):
        at = self.offset
        self.offset += len(self._utf8.decode(data))
        return at
