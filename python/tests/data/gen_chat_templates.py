"""Writes chat_templates.json: each template's text for each conversation as
transformers' apply_chat_template renders it (run once by hand in a
throwaway venv with transformers installed; not a dependency of the package):

    python -m venv /tmp/tf && /tmp/tf/bin/pip install transformers tokenizers jinja2
    /tmp/tf/bin/python python/tests/data/gen_chat_templates.py
"""
import json
import pathlib
import sys
import tempfile

import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

OUT = pathlib.Path(__file__).with_name("chat_templates.json")

CHATML = (
    "{%- if tools %}\n"
    "{{- '<|im_start|>system\\n' }}\n"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}\n"
    "{{- 'Tools:\\n' }}\n"
    "{%- for tool in tools %}{{- tool | tojson }}{{- '\\n' }}{%- endfor %}\n"
    "{{- '<|im_end|>\\n' }}\n"
    "{%- elif messages[0].role != 'system' %}\n"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "{%- if message.role not in ['system', 'user', 'assistant'] %}"
    "{{- raise_exception('Unknown role: ' + message.role) }}{%- endif %}\n"
    "{%- if message.role == 'system' and tools %}{%- continue %}{%- endif %}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "{{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)

LLAMA = (
    "{% if messages[0]['role'] == 'system' %}"
    "{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}"
    "{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' ' + content.strip() + ' ' + eos_token }}{% endif %}"
    "{% endfor %}"
)

# ChatML with tools as Hermes 2 Pro and Qwen 2.5 write them: the tools in <tools>, the assistant's calls in
# <tool_call> blocks (arguments through tojson: a dict, as transformers documents), tool results in
# <tool_response> blocks of one user turn
HERMES = (
    "{%- if tools %}\n"
    "{{- '<|im_start|>system\\n' }}\n"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}\n"
    "{{- '# Tools\\n\\nYou may call functions. Their signatures:\\n<tools>\\n' }}\n"
    "{%- for tool in tools %}{{- tool | tojson }}{{- '\\n' }}{%- endfor %}\n"
    "{{- '</tools>\\n\\nWrite each call as <tool_call>\\n{\"name\": <name>, \"arguments\": <object>}\\n"
    "</tool_call><|im_end|>\\n' }}\n"
    "{%- elif messages[0].role == 'system' %}\n"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "{%- if message.role == 'system' %}\n"
    "{%- if not loop.first %}{{- raise_exception('The system message must come first') }}{%- endif %}\n"
    "{%- elif message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\n"
    "{%- elif message.role == 'assistant' %}\n"
    "{{- '<|im_start|>assistant' }}\n"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}\n"
    "{%- for call in message.tool_calls %}\n"
    "{%- if call.function is defined %}{%- set call = call.function %}{%- endif %}\n"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + call.name + '\", \"arguments\": ' + call.arguments | tojson + "
    "'}\\n</tool_call>' }}\n"
    "{%- endfor %}\n"
    "{{- '<|im_end|>\\n' }}\n"
    "{%- elif message.role == 'tool' %}\n"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}\n"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}\n"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}\n"
    "{%- else %}{{- raise_exception('Unknown role: ' + message.role) }}\n"
    "{%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n"
)

TEMPLATES = {
    "chatml": {"source": CHATML, "bos_token": None, "eos_token": "<|im_end|>"},
    "llama": {"source": LLAMA, "bos_token": "<s>", "eos_token": "</s>"},
    "hermes": {"source": HERMES, "bos_token": None, "eos_token": "<|im_end|>"},
}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Météo d'une ville",
                                             "parameters": {"type": "object",
                                                            "properties": {"city": {"type": "string"}}}}}]

CONVERSATIONS = [
    {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": True},
    {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "  Wie geht's? 日本語 🙂 "},
                  {"role": "assistant", "content": "Gut, danke."}, {"role": "user", "content": "Und dir?"}],
     "add_generation_prompt": True},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "weather in Zürich?"}],
     "add_generation_prompt": True, "tools": WEATHER},
    {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "add_generation_prompt": True},
    {"messages": [{"role": "tool", "content": "42"}], "add_generation_prompt": True},
    # a reply's two calls (arguments as values, as the server passes them) and their results
    {"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "weather in Zürich and Paris?"},
                  {"role": "assistant", "content": "",
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}},
                                  {"id": "call_2", "type": "function",
                                   "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": [1, 2]}}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "12 °C"},
                  {"role": "tool", "tool_call_id": "call_2", "content": "15 °C"}],
     "add_generation_prompt": True, "tools": WEATHER},
]


def render(tok, case):
    try:
        return {"text": tok.apply_chat_template(case["messages"], tools=case.get("tools"), tokenize=False,
                                                add_generation_prompt=case["add_generation_prompt"])}
    except Exception as exc:  # the template's raise_exception
        return {"error": str(exc)}


def main():
    base = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "</s>": 2, "<|im_end|>": 3}, unk_token="<unk>"))
    base.pre_tokenizer = pre_tokenizers.Whitespace()
    out = {"transformers": transformers.__version__, "templates": TEMPLATES, "cases": []}
    for name, t in TEMPLATES.items():
        with tempfile.TemporaryDirectory() as d:
            base.save(f"{d}/tokenizer.json")
            specials = {k: v for k, v in (("bos_token", t["bos_token"]), ("eos_token", t["eos_token"])) if v}
            json.dump({"chat_template": t["source"], **specials, "tokenizer_class": "PreTrainedTokenizerFast"},
                      open(f"{d}/tokenizer_config.json", "w"))
            tok = transformers.AutoTokenizer.from_pretrained(d)
            for case in CONVERSATIONS:
                out["cases"].append({"template": name, **case, "expected": render(tok, case)})
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
