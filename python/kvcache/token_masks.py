"""The allowed-token mask of one request of kvcache.Engine, set before each token it samples
(kvc_engine_set_allowed_tokens): the intersection of what its grammar allows (structured outputs),
its allowed_token_ids and what its bad_words leave (vLLM's three masks, docs/serve.md)."""
import numpy as np

from ._lib import int64, invalid
from .structured import set_bits

MAX_BAD_WORDS = 256  # token sequences of bad_words per request (each word counts once or twice: see the server)
MAX_BAD_WORD_TOKENS = 64  # tokens of one bad word


def wanted(params):
    """Whether a SamplingParams restricts its tokens with a mask."""
    return params.structured is not None or params.allowed_token_ids is not None or bool(params.bad_words)


def _ids(values, vocab, what):
    """A list of token ids in [0, vocab) as int64 [n]."""
    if not isinstance(values, (list, tuple)):
        raise invalid(f"{what} must be a list or tuple of token ids, not {type(values).__name__}")
    out = np.fromiter((int64(t, what) for t in values), dtype=np.int64, count=len(values))
    if out.size and (out.min() < 0 or out.max() >= vocab):
        raise invalid(f"{what}: token ids must lie in [0, {vocab})")
    return out


class RequestMask:
    """A request's mask (uint32 [cdiv(vocab, 32)], bit t % 32 of word t / 32) and what it follows.

    allowed_token_ids: only those tokens (none other, an end-of-sequence id included, as vLLM).
    bad_words: token sequences; a sequence's last token is banned when the tokens generated just before
    are the rest of it (the prompt's tokens do not count: vLLM's rule). The grammar's stop tokens come
    only where its output is complete (structured.Matcher)."""

    def __init__(self, params, vocab, all_tokens):
        self.words = np.empty_like(all_tokens)
        self._all = all_tokens
        self.matcher = None if params.structured is None else params.structured.matcher()
        self._stops = np.asarray(params.stop_token_ids, dtype=np.int64)
        self._allowed = None
        if params.allowed_token_ids is not None:
            ids = _ids(params.allowed_token_ids, vocab, "allowed_token_ids")
            if ids.size == 0:
                raise invalid("allowed_token_ids must name at least one token")
            self._allowed = np.zeros_like(all_tokens)
            set_bits(self._allowed, ids, True)
        self._bad = []
        for word in params.bad_words or ():
            if len(self._bad) == MAX_BAD_WORDS:
                raise invalid(f"bad_words: at most {MAX_BAD_WORDS} token sequences")
            ids = _ids(word, vocab, "bad_words")
            if not 0 < ids.size <= MAX_BAD_WORD_TOKENS:
                raise invalid(f"bad_words: each is 1 to {MAX_BAD_WORD_TOKENS} token ids")
            self._bad.append(tuple(int(t) for t in ids))
        self._keep = max((len(w) - 1 for w in self._bad), default=0)  # generated tokens the prefixes look at
        self._recent = []

    def fill(self):
        """The mask of the next token (self.words)."""
        w = self.words
        if self.matcher is not None:
            self.matcher.fill(w)
            set_bits(w, self._stops, self.matcher.accepting)
        else:
            w[:] = self._all
        if self._allowed is not None:
            np.bitwise_and(w, self._allowed, out=w)
        n = len(self._recent)
        banned = [word[-1] for word in self._bad if len(word) - 1 <= n and tuple(self._recent[n - len(word) + 1:]) ==
                  word[:-1]]
        if banned:
            set_bits(w, np.asarray(banned, dtype=np.int64), False)
        return w

    def advance(self, new):
        """Moves past the request's new tokens: the finish reason when it must end ("stop" once its grammar takes
        nothing more, "abort" if the grammar refused a token), else None."""
        if self.matcher is not None:
            if not all(self.matcher.accept(t) for t in new):
                return "abort"  # the mask made this impossible; never a silent invalid output
            if self.matcher.stopped:
                return "stop"
        if self._keep:
            self._recent = (self._recent + list(new))[-self._keep:]
        return None

    def allowed(self, vocab):
        """bool [vocab]: the tokens the last mask allowed."""
        return np.unpackbits(self.words.view(np.uint8), bitorder="little")[:vocab] == 1
