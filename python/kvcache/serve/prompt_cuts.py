"""What a request's text becomes in tokens beyond plain tokenizing: vLLM's truncate_prompt_tokens (the prompt's
last tokens, or its first with truncation_side "right") and bad_words (the token sequences banned); docs/serve.md
lists both."""
from .. import token_masks
from .protocol import bad


def kept(truncate, max_model_len):
    """How many of a prompt's last tokens truncate_prompt_tokens keeps (None: all; -1: the model's length); 400
    beyond the model's length, or for 0, which would keep no prompt."""
    k = max_model_len if truncate == -1 else truncate
    if k is not None and not 0 < k <= max_model_len:
        raise bad(f"truncate_prompt_tokens ({k}) must be -1 (the model's length) or in [1, {max_model_len}]: it "
                  f"cannot be greater than max_model_len ({max_model_len}); please select a smaller truncation size",
                  "truncate_prompt_tokens")
    return k


def cut(ids, keep, right=False):
    """A prompt's token ids cut to keep (None: all): its last ones, or its first (right: truncation_side "right")."""
    if keep is None or len(ids) <= keep:
        return ids
    return ids[:keep] if right else ids[-keep:]


def encode(tokenizer, text, add_special_tokens, keep=None, right=False):
    """The ids of a prompt's text; keep: at most that many, as a tokenizer truncating on the left (right: on the
    right) gives them (the special tokens it adds kept, the text's last (first) tokens beside them)."""
    ids = tokenizer.encode(text, add_special_tokens)
    if keep is None or len(ids) <= keep:
        return ids
    plain = tokenizer.encode(text, False) if add_special_tokens else ids
    at = next((i for i in range(len(ids) - len(plain) + 1) if ids[i:i + len(plain)] == plain), None)
    room = keep - (len(ids) - len(plain))
    if at is None or room <= 0:
        return cut(ids, keep, right)
    return ids[:at] + (plain[:room] if right else plain[-room:]) + ids[at + len(plain):]


def bad_word_ids(tokenizer, words):
    """The token sequences of vLLM's bad_words: each word (leading blanks stripped) as a text beginning with it
    gives it, and, when a space before it gives as many tokens beginning with another one, that too (the word
    inside a text); 400 naming bad_words for a word of no token or of more than token_masks.MAX_BAD_WORD_TOKENS."""
    out = []
    for word in words:
        bare = tokenizer.encode(word.lstrip(), False)
        spaced = tokenizer.encode(" " + word.lstrip(), False)
        out.append(tuple(bare))
        if spaced and len(spaced) == len(bare) and spaced[0] != bare[0]:
            out.append(tuple(spaced))
    if any(not 0 < len(ids) <= token_masks.MAX_BAD_WORD_TOKENS for ids in out):
        raise bad(f"bad_words: each word must be 1 to {token_masks.MAX_BAD_WORD_TOKENS} tokens", "bad_words")
    return tuple(out)
